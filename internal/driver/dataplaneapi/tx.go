package dataplaneapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
)

// transact makes every change in one transaction and commits it; a
// transaction that is not committed is deleted, whatever happened.
func (d *Driver) transact(ctx context.Context, have *state, changes []change, p *Pass) error {
	t := time.Now()
	tx, err := d.c.OpenTx(ctx, have.version)
	if err != nil {
		return fmt.Errorf("opening a transaction: %w", err)
	}
	p.Writes++
	committed := false
	defer func() {
		if committed {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := d.c.DeleteTx(cctx, tx.ID); err != nil && !errors.Is(err, dataplane.ErrNotFound) {
			d.log.Warn("could not delete a transaction", "transaction", tx.ID, "err", err)
		}
	}()
	w := dataplane.Write{TxID: tx.ID}
	for _, c := range changes {
		if err := d.do(ctx, c, w); err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		p.Writes++
	}
	p.Tx = time.Since(t)
	t = time.Now()
	_, resp, err := d.c.CommitTx(ctx, tx.ID)
	p.Commit = time.Since(t)
	if err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	committed = true
	p.Writes++
	if resp.ReloadID == "" {
		p.Reloaded = true
		return nil // a forced reload, already done
	}
	t = time.Now()
	rctx, cancel := context.WithTimeout(ctx, d.opts.ReloadTimeout)
	defer cancel()
	err = d.c.WaitReload(rctx, resp.ReloadID, d.opts.ReloadPoll)
	p.Reload = time.Since(t)
	p.Reloaded = err == nil
	return err
}

// repair follows a failed reload. The API still holds the change HAProxy
// refused and would write it again at every commit, so one transaction
// puts back what the driver's objects were before; HAProxy kept serving
// that meanwhile. The pass still fails, and is retried with backoff.
func (d *Driver) repair(ctx context.Context, before *state, cause error, p *Pass) error {
	v, err := d.c.Version(ctx)
	if err != nil {
		return errors.Join(cause, fmt.Errorf("repair after the failed reload: %w", err))
	}
	now, err := d.read(ctx, v)
	if err != nil {
		return errors.Join(cause, fmt.Errorf("repair after the failed reload: %w", err))
	}
	changes := diff(now, before, nil, d.opts.Seed == "")
	if len(changes) == 0 {
		return cause
	}
	var rp Pass
	if _, err := d.commitChanges(ctx, now, before, changes, &rp); err != nil {
		return errors.Join(cause, fmt.Errorf("repair after the failed reload: %w", err))
	}
	p.Writes += rp.Writes
	p.Reload += rp.Reload
	d.log.Warn("reload failed; the API's configuration was put back to the last one that loaded", "err", cause)
	return cause
}

func (d *Driver) do(ctx context.Context, c change, w dataplane.Write) error {
	var err error
	w.Full = c.full
	switch {
	case c.rules:
		_, err = d.c.ReplaceList(ctx, c.path, c.list, w)
	case c.method == "POST":
		_, err = d.c.Create(ctx, c.path, c.obj, w)
	case c.method == "PUT":
		_, err = d.c.Replace(ctx, c.path, c.obj, w)
	case c.method == "DELETE":
		_, err = d.c.Delete(ctx, c.path, w)
	}
	return err
}

// replaceChild records a server of backend written in the cached state.
func (s *state) replaceChild(backend string, obj Object) {
	if sec := s.backends[backend]; sec != nil {
		name, _ := obj["name"].(string)
		if _, i := sec.child(name); i >= 0 {
			sec.children[i] = obj
		}
	}
}
