package runtimeapi

import (
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// clientAuthMapFiles is the map of the frontends whose clients must
// present a certificate (render/clientauth.go: AllowValidOnly verified
// on the crt-list lines; the map refuses the default line's clients,
// which are never asked), pushed like the route maps: turning
// AllowValidOnly on or off is an entry, no reload. None when no frontend
// terminates TLS (no rule reads it).
func clientAuthMapFiles(opts render.Options, cfg model.Config) []patternFile {
	if !render.ClientAuthOnLines(opts) {
		return nil
	}
	var entries []render.MapEntry
	terminating := false
	for _, f := range cfg.Frontends {
		if f.TLS == nil {
			continue
		}
		terminating = true
		if render.ClientAuthRequired(f) {
			entries = append(entries, render.MapEntry{Key: f.Name, Value: "required"})
		}
	}
	if !terminating {
		return nil
	}
	pf := patternFile{path: render.ClientAuthMapFile(opts.ACLDir), body: render.MapContent(entries), what: "client certificate map"}
	for _, e := range entries {
		pf.lines = append(pf.lines, e.Key+" "+e.Value)
	}
	return []patternFile{pf}
}
