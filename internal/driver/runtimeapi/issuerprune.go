package runtimeapi

import (
	"bytes"
	"context"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// pruneIssuers deletes from the worker's issuers' map
// (render.IssuerMapFile) the keys that the client certificate map no
// longer matches: a key is "FRONTEND/HOST|VALUE|ISSUER" and VALUE the
// host's entry when the worker learned it (render/hostauth.go), so once a
// host's CA bundle rotates, or its verification turns off or changes, its
// keys are never matched again, and a worker that runs long would keep
// one per bundle version. Asked when the client certificate map (auth,
// as pushed) differs from the one last pruned against: one `show map`,
// then a `del map` per key gone, once per version of the map. A failure
// is no error of the pass (the keys match nothing): the next change
// tries again. A reload starts the new worker's map empty.
func (d *HAProxy) pruneIssuers(ctx context.Context, cfg model.Config, auth patternFile, res *driver.Result) {
	if bytes.Equal(auth.body, d.issuersFor) {
		return
	}
	d.issuersFor = bytes.Clone(auth.body) // tried once per version
	p, ok := issuerMapFile(d.opts.Render, cfg)
	if !ok {
		return
	}
	hosts := make(map[string]string, len(auth.lines))
	for _, l := range auth.lines {
		k, v, _ := strings.Cut(l, " ")
		hosts[k] = v
	}
	ans, err := d.rt.ExecChecked(ctx, []string{"show map " + p})
	if err != nil {
		d.log.Debug("issuers' map not read; not pruned", "map", p, "err", err)
		return
	}
	held, err := parseShowMap(ans[0]) // mapread.go
	if err != nil {
		d.log.Warn("issuers' map read back does not look like a map; not pruned", "map", p, "err", err)
		return
	}
	var cmds []string
	for k := range held {
		host, rest, _ := strings.Cut(k, "|")
		value, _, ok := strings.Cut(rest, "|")
		if !ok || hosts[host] != value {
			cmds = append(cmds, "del map "+p+" "+k)
		}
	}
	if len(cmds) > 0 {
		if _, err := d.rt.ExecChecked(ctx, cmds); err != nil {
			d.log.Debug("issuers' map not pruned", "map", p, "keys", len(cmds), "err", err)
			return
		}
		res.Ops += len(cmds)
		d.log.Debug("issuers' map pruned", "map", p, "keys", len(cmds), "kept", len(held)-len(cmds))
	}
}
