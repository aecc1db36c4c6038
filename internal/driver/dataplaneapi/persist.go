package dataplaneapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
)

// Server changes reach HAProxy through the runtime endpoints at once; the
// configuration (haproxy.cfg, what a reload or restart of HAProxy runs)
// follows in the background, once a slot's changes settle: one server PUT
// outside any transaction per slot that really changed (live: no reload),
// each against the version the previous one left. Such a PUT costs the
// API a rewrite of the whole haproxy.cfg (0.6 s at 1,000 backends), so a
// slot that changes and changes back before it is written costs nothing,
// and passes never wait for one.

// dirty is a slot whose configuration is not yet what HAProxy runs.
type dirty struct {
	first, last time.Time // when it became dirty, when it last changed
}

// markDirty records, for the backends not in clean, which slots' configuration
// (in have) differs from the target, and schedules their write.
func (d *Driver) markDirty(have, want *state, clean map[string]bool) {
	now := d.now()
	for be, sec := range want.backends {
		if clean[be] {
			continue
		}
		h := have.backends[be]
		for _, o := range sec.children {
			name, _ := o["name"].(string)
			key := be + "/" + name
			var cur Object
			if h != nil {
				cur, _ = h.child(name)
			}
			if cur != nil && same(cur, o) {
				delete(d.dirty, key)
				continue
			}
			dt, ok := d.dirty[key]
			if !ok {
				dt.first = now
			}
			dt.last = now
			d.dirty[key] = dt
		}
	}
	d.schedulePersist()
}

// schedulePersist arms the timer for the next slot due: once it and every
// other slot have been quiet (no pass changed anything at runtime) for
// PersistQuiet, at most PersistMaxDelay after it became dirty.
func (d *Driver) schedulePersist() {
	if d.persisting || len(d.dirty) == 0 || d.closed {
		return
	}
	next := time.Time{}
	for _, dt := range d.dirty {
		if due := d.due(dt); next.IsZero() || due.Before(next) {
			next = due
		}
	}
	wait := max(next.Sub(d.now()), 0)
	if d.timer == nil {
		d.timer = time.AfterFunc(wait, d.persist)
		return
	}
	d.timer.Reset(wait)
}

func (d *Driver) due(dt dirty) time.Time {
	due := dt.last.Add(d.opts.PersistQuiet)
	if q := d.lastChange.Add(d.opts.PersistQuiet); q.After(due) {
		due = q // changes keep coming: the write waits for a lull
	}
	if limit := dt.first.Add(d.opts.PersistMaxDelay); limit.Before(due) {
		due = limit
	}
	return due
}

// persist writes the slots that are due (the timer's function).
func (d *Driver) persist() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.persisting || d.closed {
		return // the loop under way schedules what remains when it ends
	}
	d.persisting = true
	t, v := time.Now(), d.known
	err := d.persistLoop(context.Background(), false)
	if n := d.known - v; n > 0 || err != nil {
		d.log.Info("dataplane: servers written to the configuration", "writes", n, "took", time.Since(t), "due", len(d.dirty), "err", err)
	}
	d.persisting = false
	d.idle.Broadcast()
	d.schedulePersist()
}

// Flush writes every slot not written yet to the configuration now, and
// returns once that is done, failed, or ctx ended (between two writes):
// before the controller stops, so that a restart of HAProxy finds what
// runs, and in tests.
func (d *Driver) Flush(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.persisting {
		d.idle.Wait()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	d.persisting = true
	err := d.persistLoop(ctx, true)
	d.persisting = false
	d.idle.Broadcast()
	return err
}

// persistLoop writes the dirty slots that are due (all with force), one
// at a time, each against the version the previous one left. The caller
// holds d.mu and has set d.persisting; d.mu is released during each write.
func (d *Driver) persistLoop(ctx context.Context, force bool) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if raw, err := d.persistRaw(ctx, force); raw {
			if err != nil {
				return err
			}
			continue
		}
		be, name, obj, version, ok := d.nextDue(force)
		if !ok {
			return nil
		}
		key := be + "/" + name
		done := make(chan struct{})
		d.inflight, d.inflightDone = key, done
		d.mu.Unlock()
		t := time.Now()
		wctx, cancel := context.WithTimeout(ctx, d.opts.PersistTimeout)
		resp, err := d.c.Replace(wctx, dataplane.ServerPath(be, name), obj, dataplane.Write{Version: version})
		cancel()
		took := time.Since(t)
		close(done)
		d.mu.Lock()
		d.inflight, d.inflightDone = "", nil
		if err != nil {
			return d.persistFailed(key, err)
		}
		d.log.Debug("dataplane: slot written to the configuration", "server", key, "took", took)
		if d.view != nil && d.view.version == version {
			d.view.version = max(resp.Version, version+1)
			d.view.replaceChild(be, obj)
			d.known = d.view.version
		}
		if resp.Status != 200 {
			// The API reloaded after all: what HAProxy runs is the
			// configuration now; the next pass reads it again.
			d.forget()
			return nil
		}
		d.persisted(be, name, obj)
		if st, ok := d.rt[be][name]; ok && st.admin == "drain" {
			// The write set the slot ready live: drain it again.
			wctx, cancel := context.WithTimeout(ctx, d.opts.PersistTimeout)
			err := d.c.SetRuntimeServer(wctx, be, name, dataplane.Object{"admin_state": "drain"})
			cancel()
			if err != nil {
				return d.persistFailed(key, err)
			}
		}
	}
}

// nextDue picks a dirty slot that is due (any, with force), dropping those that turned out
// to be written already (changed back, or written by a transaction).
func (d *Driver) nextDue(force bool) (be, name string, obj Object, version int64, ok bool) {
	if d.view == nil || d.wanted == nil {
		return "", "", nil, 0, false
	}
	now := d.now()
	for key, dt := range d.dirty {
		if !force && d.due(dt).After(now) {
			continue
		}
		be, name, _ = cutKey(key)
		sec := d.wanted.backends[be]
		var want Object
		if sec != nil {
			want, _ = sec.child(name)
		}
		h := d.view.backends[be]
		var cur Object
		if h != nil {
			cur, _ = h.child(name)
		}
		if want == nil || cur == nil || same(cur, want) {
			delete(d.dirty, key) // nothing to write, or a slot a transaction will make
			continue
		}
		delete(d.dirty, key)
		return be, name, want, d.view.version, true
	}
	return "", "", nil, 0, false
}

// persistFailed gives up the write of key: the slot stays dirty, and the
// next pass (a resync at the latest) reads the API again and schedules it.
func (d *Driver) persistFailed(key string, err error) error {
	d.log.Warn("dataplane: could not write a server to the configuration; HAProxy runs it, a later pass writes it", "server", key, "err", err)
	if _, ok := d.dirty[key]; !ok {
		now := d.now()
		d.dirty[key] = dirty{first: now, last: now}
	}
	if errors.Is(err, dataplane.ErrVersionMismatch) || errors.Is(err, dataplane.ErrNotFound) {
		d.view, d.wanted = nil, nil // someone else wrote: read it all again
	}
	return fmt.Errorf("writing %s to the configuration: %w", key, err)
}

// waitPersist waits until no write of the persister is under way (the
// caller holds d.mu, released meanwhile), when key is "" or is the slot
// being written.
func (d *Driver) waitPersist(key string) {
	for d.inflightDone != nil && (key == "" || key == d.inflight) {
		ch := d.inflightDone
		d.mu.Unlock()
		<-ch
		d.mu.Lock()
	}
}

// Close stops the background writes of the configuration (a write under
// way finishes). What is not written yet is HAProxy's running state only:
// the next controller's first pass writes it.
func (d *Driver) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.timer != nil {
		d.timer.Stop()
	}
}

func cutKey(key string) (be, name string, ok bool) {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return key, "", false
}
