package runtimeapi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// Source ranges (model.Frontend.SourceRanges) with an ACL directory
// (render.Options.ACLDir): each restricted frontend's rule reads its
// ranges from its own file, which HAProxy loads at start. The file is
// always written first, so a HAProxy that (re)starts reads the ranges in
// force; a running worker is then told through the Runtime API, in one
// atomic step per frontend (`prepare acl`, `add acl @V`, `commit acl
// @V`): no reload, and no moment at which the frontend lets in more, or
// fewer, clients than the old or the new ranges do.

// writeACLs writes the ACL file of every restricted frontend of cfg whose
// content is not the one last written, and returns the frontends it wrote.
func (d *HAProxy) writeACLs(cfg model.Config) ([]model.Frontend, error) {
	dir := d.opts.Render.ACLDir
	if dir == "" {
		return nil, nil
	}
	var wrote []model.Frontend
	for _, f := range cfg.Frontends {
		if !f.Restricted() {
			continue
		}
		body := render.ACLFileContent(f)
		if old, ok := d.acls[f.Name]; ok && old == string(body) {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return wrote, err
		}
		if err := atomicfile.Write(render.ACLFile(dir, f.Name), body, 0o644); err != nil {
			return wrote, fmt.Errorf("source ranges of %s: %w", f.Service, err)
		}
		if d.acls == nil {
			d.acls = make(map[string]string)
		}
		d.acls[f.Name] = string(body)
		wrote = append(wrote, f)
	}
	return wrote, nil
}

// pushACLs brings the ranges of the running worker to those of cfg, whose
// structure is the one running (same hash: the same frontends are
// restricted). It writes the files that changed and sends the runtime
// commands for them; after a restart of the controller (running unknown)
// that is every restricted frontend once.
func (d *HAProxy) pushACLs(ctx context.Context, cfg model.Config, res *driver.Result) error {
	if d.opts.Render.ACLDir == "" {
		return nil
	}
	changed, err := d.writeACLs(cfg)
	if err != nil || len(changed) == 0 {
		return err
	}
	t := time.Now()
	defer func() { res.Runtime += time.Since(t) }()
	files := make([]string, len(changed))
	lines := make([][]string, len(changed))
	for i, f := range changed {
		files[i] = render.ACLFile(d.opts.Render.ACLDir, f.Name)
		for _, p := range f.SourceRanges {
			lines[i] = append(lines[i], p.String())
		}
	}
	ops, err := d.replaceFiles(ctx, "acl", files, lines)
	if err != nil {
		d.acls = nil // unknown: write and push again next time
		d.known = false
		return fmt.Errorf("runtime API, source ranges: %w", err)
	}
	res.Ops += ops
	d.log.Info("source ranges changed without reload", "frontends", len(changed), "first", changed[0].Service)
	return nil
}

// pruneACLs removes the ACL files of frontends that are not restricted in
// cfg, once a reload put cfg in force (before, the config on disk may
// still name them).
func (d *HAProxy) pruneACLs(cfg model.Config) {
	dir := d.opts.Render.ACLDir
	if dir == "" {
		return
	}
	keep := make(map[string]bool)
	for _, f := range cfg.Frontends {
		if f.Restricted() {
			keep[filepath.Base(render.ACLFile(dir, f.Name))] = true
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".acl") && !keep[n] {
			_ = os.Remove(filepath.Join(dir, n))
			delete(d.acls, strings.TrimSuffix(n, ".acl"))
		}
	}
}
