package runtimeapi

import (
	"context"
	"fmt"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// Source ranges (model.Frontend.SourceRanges) with an ACL directory
// (render.Options.ACLDir): each restricted frontend's rule reads its
// ranges from two files of its own, one per family (a client is checked
// against those of its family only: render.SourceCondition), which
// HAProxy loads at start, and a running worker is told through the
// Runtime API (filevers.go): no reload, and no moment at which the
// frontend lets in more, or fewer, clients than the old or the new ranges
// do. Both files exist whichever families have ranges (a family without
// any holds a pattern none of its clients matches: render.ACLLines), so
// that ranges moving from one family to the other are no reload either. A change touching both families replaces the two files one
// after the other: in between, one family is checked against its old
// ranges and the other against its new ones, each exactly as the old or
// the new ranges say for that family.

// aclFiles are the ACL files of cfg's restricted frontends, and in tproxy
// mode those of the spares of the pool that check sources
// (render.SpareSources: a listened frontend whose backend is such a spare
// has no files of its own, the spare's hold its ranges, so that a Service taking or leaving a spare changes
// files, never the structure).
func (d *HAProxy) aclFiles(cfg model.Config) []patternFile {
	o := d.opts.Render
	dir := o.ACLDir
	if dir == "" {
		return nil
	}
	var out []patternFile
	spares, spareSourced := render.SpareSourcesAt(cfg, o, d.ranged.of(cfg, o)) // aclmemo.go
	add := func(f model.Frontend, what string) {
		for _, v6 := range []bool{false, true} {
			out = append(out, patternFile{path: render.ACLFile(dir, f.Name, v6), body: render.ACLFileContent(f, v6),
				lines: render.ACLLines(f, v6), what: what})
		}
	}
	for i := range cfg.Frontends {
		if f := &cfg.Frontends[i]; f.Restricted() && !spareSourced(*f) {
			add(*f, "source ranges of "+f.Service)
		}
	}
	for _, f := range spares {
		what := "source ranges of free spare " + f.Name
		if f.Service != "" {
			what = "source ranges of " + f.Service + " (" + f.Name + ")"
		}
		add(f, what)
	}
	return out
}

// pushACLs brings the ranges of the running worker to those of cfg, whose
// structure is the one running (same hash: the same frontends are
// restricted). After a restart of the controller (running unknown) each
// file is read back first and pushed only when the worker does not hold
// it (heldACLs, mapread.go).
func (d *HAProxy) pushACLs(ctx context.Context, cfg model.Config, res *driver.Result) error {
	changed, err := d.push(ctx, &d.acls, d.aclFiles(cfg), res)
	if err != nil {
		return fmt.Errorf("runtime API, source ranges: %w", err)
	}
	if len(changed) > 0 {
		d.log.Info("source ranges changed without reload", "frontends", len(changed), "first", changed[0].what)
	}
	return nil
}
