package dataplaneapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
)

// Defaults of Options.RawMinWrites and Options.RawPersistMin.
const (
	defaultRawMinWrites  = 16
	defaultRawPersistMin = 2
)

// useRaw reports whether a structural change of these writes goes through
// the raw configuration: every Service's sections only (the operator's
// backend in seed mode is written object by object), and enough writes
// that one rewrite of the whole file costs less than a transaction.
func (d *Driver) useRaw(changes []change) bool {
	return d.opts.Seed == "" && d.opts.RawMinWrites > 0 && len(changes) >= d.opts.RawMinWrites
}

// rawBlocks renders the sections of want that differ from have, and
// deletes those of have that want has not. It fails (errNotRenderable)
// when a section holds something the renderer does not know.
func rawBlocks(have, want *state) (map[string][]string, []string, error) {
	blocks := map[string][]string{}
	var order []string
	for _, kind := range []struct {
		name       string
		have, want map[string]*section
	}{{"backend", have.backends, want.backends}, {"frontend", have.frontends, want.frontends}} {
		for _, name := range sortedKeys(kind.have) {
			if kind.want[name] == nil {
				blocks[kind.name+" "+name] = nil
			}
		}
		for _, name := range sortedKeys(kind.want) {
			w, h := kind.want[name], kind.have[name]
			if h != nil && sameSection(h, w) {
				continue
			}
			ls, err := sectionText(kind.name, w)
			if err != nil {
				return nil, nil, err
			}
			key := kind.name + " " + name
			blocks[key] = ls
			order = append(order, key)
		}
	}
	return blocks, order, nil
}

func sameSection(h, w *section) bool {
	if h == w {
		return true
	}
	if !same(h.base, w.base) || len(h.children) != len(w.children) {
		return false
	}
	for _, c := range w.children {
		o, _ := h.child(c["name"].(string))
		if o == nil || !same(o, c) {
			return false
		}
	}
	return true
}

// rawCommit writes want's sections in one raw write that reloads, and
// waits for the reload: a transaction's work in one request. It returns
// errNotRenderable (nothing written) when a section cannot be rendered.
func (d *Driver) rawCommit(ctx context.Context, have, want *state, p *Pass) error {
	t := time.Now()
	blocks, order, err := rawBlocks(have, want)
	if err != nil {
		return err
	}
	text, v, err := d.c.RawConfig(ctx)
	if err != nil {
		return fmt.Errorf("reading the raw configuration: %w", err)
	}
	if v != have.version {
		return fmt.Errorf("raw configuration at version %d, the pass read %d: %w", v, have.version, dataplane.ErrVersionMismatch)
	}
	text = editRaw(text, blocks, order)
	p.Tx = time.Since(t)
	t = time.Now()
	resp, err := d.c.PostRaw(ctx, text, v, false)
	p.Commit = time.Since(t)
	if err != nil {
		return fmt.Errorf("writing the raw configuration (%d sections): %w", len(blocks), err)
	}
	p.Writes++
	if resp.ReloadID == "" {
		p.Reloaded = true
		return nil
	}
	t = time.Now()
	rctx, cancel := context.WithTimeout(ctx, d.opts.ReloadTimeout)
	defer cancel()
	err = d.c.WaitReload(rctx, resp.ReloadID, d.opts.ReloadPoll)
	p.Reload = time.Since(t)
	p.Reloaded = err == nil
	return err
}

// commitChanges makes a structural change: in one raw write when that is
// cheaper and every section renders (raw is then true), else in one
// transaction.
func (d *Driver) commitChanges(ctx context.Context, have, want *state, changes []change, p *Pass) (raw bool, err error) {
	if d.useRaw(changes) {
		err := d.rawCommit(ctx, have, want, p)
		if !errors.Is(err, errNotRenderable) {
			return true, err
		}
		d.log.Info("dataplane: a section cannot be written as text; using a transaction", "err", err)
	}
	return false, d.transact(ctx, have, changes, p)
}

// slotWrite is a slot's configuration due to be written.
type slotWrite struct {
	be, name string
	obj      Object
	reloads  bool // as a server PUT, the API would reload (putReloads)
}

// persistRaw writes every slot due (all with force) in one raw write that
// does not reload: HAProxy runs them already. It reports false, having
// written nothing, when there are fewer than RawPersistMin or a backend
// cannot be rendered: the slots are then written one server PUT at a time.
// The caller holds d.mu and has set d.persisting; d.mu is released during
// the requests. A pass meanwhile need not wait: the write changes nothing
// HAProxy runs (a slot it changes again stays dirty).
func (d *Driver) persistRaw(ctx context.Context, force bool) (bool, error) {
	if d.opts.Seed != "" || d.opts.RawPersistMin <= 0 || d.view == nil || d.wanted == nil {
		return false, nil
	}
	due := d.allDue(force)
	if len(due) < d.opts.RawPersistMin && !slices.ContainsFunc(due, func(w slotWrite) bool { return w.reloads }) {
		return false, nil
	}
	version := d.view.version
	secs := map[string]*section{}
	for _, w := range due {
		sec := secs[w.be]
		if sec == nil {
			h := d.view.backends[w.be]
			sec = &section{base: h.base, children: slices.Clone(h.children)}
			secs[w.be] = sec
		}
		if _, i := sec.child(w.name); i >= 0 {
			sec.children[i] = w.obj
		}
	}
	blocks := make(map[string][]string, len(secs))
	for be, sec := range secs {
		ls, err := sectionText("backend", sec)
		if err != nil {
			return false, nil
		}
		blocks["backend "+be] = ls
	}
	for _, w := range due {
		delete(d.dirty, w.be+"/"+w.name)
	}
	done := make(chan struct{})
	d.inflight, d.inflightDone = "", done // no slot to wait for (see above); a transaction waits
	d.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, d.opts.PersistTimeout)
	resp, err := d.postPersist(wctx, blocks, version)
	cancel()
	close(done)
	d.mu.Lock()
	d.inflight, d.inflightDone = "", nil
	if err != nil {
		for _, w := range due[1:] {
			if _, ok := d.dirty[w.be+"/"+w.name]; !ok {
				now := d.now()
				d.dirty[w.be+"/"+w.name] = dirty{first: now, last: now}
			}
		}
		return true, d.persistFailed(due[0].be+"/"+due[0].name, err)
	}
	if d.view != nil && d.view.version == version {
		d.view.version = max(resp.Version, version+1)
		for _, w := range due {
			d.view.replaceChild(w.be, w.obj)
		}
		d.known = d.view.version
	}
	if resp.Status != 201 || resp.ReloadID != "" {
		d.forget() // the API reloaded after all: read it all again
	}
	return true, nil
}

func (d *Driver) postPersist(ctx context.Context, blocks map[string][]string, version int64) (dataplane.Response, error) {
	text, v, err := d.c.RawConfig(ctx)
	if err != nil {
		return dataplane.Response{}, err
	}
	if v != version {
		return dataplane.Response{}, fmt.Errorf("raw configuration at version %d, want %d: %w", v, version, dataplane.ErrVersionMismatch)
	}
	return d.c.PostRaw(ctx, editRaw(text, blocks, nil), version, true)
}

// allDue takes every dirty slot that is due and really differs from the
// configuration (see nextDue), without removing it from d.dirty.
func (d *Driver) allDue(force bool) []slotWrite {
	now := d.now()
	var out []slotWrite
	for key, dt := range d.dirty {
		if !force && d.due(dt).After(now) {
			continue
		}
		be, name, _ := cutKey(key)
		var want, cur Object
		if sec := d.wanted.backends[be]; sec != nil {
			want, _ = sec.child(name)
		}
		if h := d.view.backends[be]; h != nil {
			cur, _ = h.child(name)
		}
		if want == nil || cur == nil || same(cur, want) {
			delete(d.dirty, key)
			continue
		}
		out = append(out, slotWrite{be, name, want, putReloads(cur, want)})
	}
	slices.SortFunc(out, func(a, b slotWrite) int {
		if a.be != b.be {
			return strings.Compare(a.be, b.be)
		}
		return strings.Compare(a.name, b.name)
	})
	return out
}
