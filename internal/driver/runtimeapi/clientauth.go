package runtimeapi

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// clientAuthMapFiles is the map of the frontends whose clients must
// present a certificate (render/clientauth.go: AllowValidOnly verified
// on the crt-list lines; the map refuses the default line's clients,
// which are never asked), pushed like the route maps: turning
// AllowValidOnly on or off is an entry, no reload. None when no frontend
// terminates TLS, the fixed HTTPS listener included (no rule reads it).
//
// Order: a frontend enters the map only once its lines verify (a client
// of its hosts is then asked; entering before, the rule would refuse
// the client about to present a valid certificate), and leaves it before
// they stop (routemaps.go pushes the map before the certificates:
// pushRouteMaps holds back what heldBack says, pushClientAuth sends it
// after them).
func clientAuthMapFiles(opts render.Options, cfg model.Config, heldBack func(model.Frontend) bool) []patternFile {
	if !render.ClientAuthOnLines(opts) || !terminatesTLS(opts, cfg) {
		return nil
	}
	var entries []render.MapEntry
	for i := range cfg.Frontends {
		f := &cfg.Frontends[i] // most are a Service's: not copied
		if f.TLS == nil {
			continue
		}
		if render.ClientAuthRequired(*f) && (heldBack == nil || !heldBack(*f)) {
			entries = append(entries, render.MapEntry{Key: f.Name, Value: "required"})
		}
		entries = append(entries, render.HostClientAuthEntries(opts, *f)...) // per host (render/hostauth.go)
	}
	if fixed, _, ok := render.HTTPSListenerFront(cfg, opts); ok {
		// The fixed HTTPS listener's lines verifying for the frontends
		// behind it (render.mergeCerts): their hosts, under its name.
		entries = append(entries, render.HostClientAuthEntries(opts, fixed)...)
	}
	pf := patternFile{path: render.ClientAuthMapFile(opts.ACLDir), body: render.MapContent(entries), what: "client certificate map"}
	for _, e := range entries {
		pf.lines = append(pf.lines, e.Key+" "+e.Value)
	}
	return []patternFile{pf}
}

// issuerMapFile is render.IssuerMapFile when the config rendered from
// cfg may read it (a frontend terminating TLS, the fixed HTTPS listener
// included: the host rules of render/hostauth.go): empty on disk, filled
// by the worker's own rules, never pushed (a push would drop what the
// worker learned).
func issuerMapFile(opts render.Options, cfg model.Config) (string, bool) {
	p := render.IssuerMapFile(opts.ACLDir)
	if !render.ClientAuthOnLines(opts) || !model.ValidFilePath(p) || !terminatesTLS(opts, cfg) {
		return "", false
	}
	return p, true
}

// terminatesTLS reports whether the config rendered from cfg has a
// frontend terminating TLS, the fixed HTTPS listener included: the one
// condition of the client certificate map and the issuers' map.
func terminatesTLS(opts render.Options, cfg model.Config) bool {
	if opts.HTTPSListener() {
		return true
	}
	for i := range cfg.Frontends {
		if cfg.Frontends[i].TLS != nil {
			return true
		}
	}
	return false
}

// writeIssuerMap creates cfg's issuer map, empty, unless it exists (a
// new worker reads it; its entries are the running worker's, in memory).
func writeIssuerMap(cfg model.Config, opts render.Options) error {
	p, ok := issuerMapFile(opts, cfg)
	if !ok {
		return nil
	}
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	return atomicfile.Write(p, nil, 0o644)
}

// heldBack reports whether the worker's crt-list lines of f are known
// not to verify yet (a frontend whose AllowValidOnly turns on this pass);
// for a frontend behind the fixed HTTPS listener (no crt-list of its
// own), the listener's lines of its certificates.
func (d *HAProxy) heldBack(f model.Frontend) bool {
	if !d.certs.known || d.certs.pid != d.pid {
		return false
	}
	dir := d.opts.Render.CertDir
	lines, own := d.certs.lists[render.CrtListFile(dir, f.Name)]
	if !own && f.TLS != nil {
		// Behind the fixed HTTPS listener: its certificates' lines there.
		for _, l := range d.certs.lists[render.CrtListFile(dir, render.HTTPSListenerFrontend)] {
			for _, c := range f.TLS.Certificates {
				if strings.HasPrefix(l, render.CertFile(dir, c.Name)+" [verify required") {
					return false
				}
			}
		}
		return true
	}
	for _, l := range lines[min(1, len(lines)):] {
		if strings.Contains(l, "[verify required") {
			return false
		}
	}
	return true
}

// pushClientAuth sends the client certificate map whole, after the
// certificates: the frontends pushRouteMaps held back enter it.
func (d *HAProxy) pushClientAuth(ctx context.Context, cfg model.Config, res *driver.Result) error {
	files := clientAuthMapFiles(d.opts.Render, cfg, nil)
	if len(files) == 0 {
		return nil
	}
	if _, err := d.pushMaps(ctx, &d.routeMaps, files, nil, res); err != nil { // mapsync.go
		return fmt.Errorf("runtime API, client certificate map: %w", err)
	}
	d.pruneIssuers(ctx, cfg, files[0], res) // issuerprune.go
	return nil
}

// hostClientAuths are the valid client verifications of f's
// certificates (per host, render/hostauth.go): their CA files are
// written and committed as the frontend's are (cafiles.go).
func hostClientAuths(f model.Frontend) []*model.ClientAuth {
	if f.TLS == nil {
		return nil
	}
	var out []*model.ClientAuth
	for _, c := range f.TLS.Certificates {
		if model.ValidClientAuth(c.Client) {
			out = append(out, c.Client)
		}
	}
	return out
}
