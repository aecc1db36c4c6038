package runtimeapi

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// Servers created again at runtime (plan.Renew): a backend speaking TLS
// whose servers present no client certificate verifies with the CA bundle
// its servers were created with, whatever `commit ssl ca-file` answered
// (cafiles.go). Once applyCAs committed another bundle to the CA file
// such a backend names, its servers are renewed: created again by `add
// server` naming the same file, which a server created at runtime reads
// from the worker's store, so it verifies with the committed bundle
// (measured on 2.6.12 and 3.0.11: docs/gateway.md, "CA files at
// runtime"). No reload, and no request without a server: twins serve
// while the slots are deleted and created again.
//
// A renewal is no wait inside a pass: each pass sends what may go now
// and records where each backend's renewal stands (d.renewals), and the
// pass's Result asks the loop to come back (driver.Result.Again, every
// renewPoll), so that other changes go through between the phases and
// several backends renew side by side. A phase whose servers must pass
// their check, or whose deletions HAProxy refuses while connections
// remain, is looked at again by the next pass. While a backend renews,
// no other operation touches its slots (heldForRenewal); its changes are
// planned once it is done. The waits are bounded: a server still holding
// connections after renewDrain has them shut (`shutdown sessions
// server`), and a server whose check has not passed after renewUp is left
// to its check (the bundle asked for is what verifies, whatever it lets
// in). A renewal cut short by an error is followed by a reload
// (renewFailed), which rebuilds the backend from the files: they hold the
// new bundle already; a reload ends every renewal under way.

// renewFailed stands for the structure hash after a renewal cut short.
const renewFailed = "(servers renewed for a CA in doubt)"

// renewDrain and renewUp bound a renewal's waits; renewPoll is how soon
// a pass with a renewal under way asks to come back.
var (
	renewDrain = 10 * time.Second
	renewUp    = 15 * time.Second
	renewPoll  = 100 * time.Millisecond
)

// renewable reports whether the servers of be are renewed when the bundle
// of its CA file changes, rather than reloaded (staleServerCAs): a
// backend verifying its servers against a CA file, presenting no client
// certificate (with one, the commit alone is enough), whose servers
// `add server` can create as render writes them (on 2.6: no `cookie`, no
// `track`) in a backend whose balance algorithm takes servers at runtime
// (not `source`'s map, not `static-rr`).
func renewable(be *model.Backend) bool {
	return model.ValidBackendTLS(be.TLS) && !be.TLS.NoVerify && be.TLS.Cert == "" &&
		!be.TrackNodes && be.Cookie == nil && be.Balance != "source" && be.Balance != "static-rr" &&
		be.Name != model.NodesBackend
}

// A renewal is where the renewal of one backend stands.
type renewal struct {
	phases []plan.Phase
	next   int       // the phase to send next
	sent   bool      // phases[next] was sent, its waits not over
	dels   []string  // its servers ("backend/server") still to delete
	up     []string  // its servers whose check must pass
	until  time.Time // when its wait ends
	opts   string    // the servers' keywords
	check  bool      // the servers run a health check
	again  bool      // another bundle was committed meanwhile: renew once more
}

// renewServers starts the renewal of the backends of cfg that name one of
// the CA files applyCAs committed since the last pass (paths), and takes
// every renewal under way as far as it may go now. Under d.mu, after the
// pass's operations: d.actual is what the worker runs. res.Again asks for
// the next pass while any is under way.
func (d *HAProxy) renewServers(ctx context.Context, cfg model.Config, paths []string, res *driver.Result) error {
	d.settleTwins(cfg) // renewals cut short by a restart (renewback.go)
	for _, be := range cfg.Backends {
		if len(paths) == 0 {
			break
		}
		if !renewable(be) || !slices.Contains(paths, render.CAFile(d.opts.Render.CertDir, be.TLS.CA)) || len(d.actual[be.Name]) == 0 {
			continue
		}
		if r, ok := d.renewals[be.Name]; ok {
			r.again = true // twins made before this commit hold the bundle before it
			continue
		}
		d.startRenewal(be)
	}
	if len(d.renewals) == 0 {
		return nil
	}
	t := time.Now()
	defer func() { res.Runtime += time.Since(t) }()
	ended := false
	for _, name := range slices.Sorted(maps.Keys(d.renewals)) {
		done, err := d.advance(ctx, name, d.renewals[name], res)
		if err != nil {
			// Slots may be missing or twins left: the next pass
			// reloads, from files that hold the new bundle already.
			d.renewals = nil
			d.hash = renewFailed // a reload owed (owed.go)
			return fmt.Errorf("renewing the servers of %s for its CA: %w", name, err)
		}
		if done {
			d.endRenewal(cfg, name)
			ended = true
		}
	}
	if len(d.renewals) > 0 || ended {
		// One more pass after the last ends: it plans the changes held
		// back from the backends renewed (heldForRenewal).
		res.Again = renewPoll
	}
	return nil
}

// startRenewal records the renewal of be, from its slots' states in
// d.actual; the first pass to advance it sends its first phase.
func (d *HAProxy) startRenewal(be *model.Backend) {
	if d.renewals == nil {
		d.renewals = map[string]*renewal{}
	}
	d.renewals[be.Name] = &renewal{
		phases: plan.Renew(be.Name, slices.Clone(d.actual[be.Name]), be.Check.Enabled),
		opts:   strings.Join(render.RenewOptions(be, d.opts.Render), " "),
		check:  be.Check.Enabled,
	}
	d.log.Info("servers to be created again for a new CA bundle, without reload", "backend", be.Name)
}

// endRenewal forgets the renewal of be, done, and has the next pass plan
// every backend: the changes held back from be meanwhile (heldForRenewal)
// are then sent. A renewal asked for again starts afresh.
func (d *HAProxy) endRenewal(cfg model.Config, be string) {
	r := d.renewals[be]
	delete(d.renewals, be)
	d.consistent = false
	d.log.Info("servers created again for a new CA bundle, without reload", "backend", be, "phases", len(r.phases))
	if !r.again {
		return
	}
	for _, b := range cfg.Backends {
		if b.Name == be && renewable(b) && len(d.actual[be]) > 0 {
			d.startRenewal(b)
		}
	}
}

// advance takes the renewal r of backend be as far as it may go now: the
// waits of the phase sent looked at once, then the next phases sent until
// one has to wait. It reports whether the renewal is done.
func (d *HAProxy) advance(ctx context.Context, be string, r *renewal, res *driver.Result) (bool, error) {
	for range len(r.phases) + 1 { // bounded: one phase a round at most
		if r.sent {
			over, err := d.waited(ctx, be, r, res)
			if err != nil || !over {
				return false, err
			}
			r.sent = false
			r.next++
		}
		if r.next == len(r.phases) {
			return true, nil
		}
		if err := d.sendPhase(ctx, r, res); err != nil {
			return false, err
		}
	}
	return false, nil
}

// sendPhase sends r's next phase: its creations and state changes in one
// batch, its deletions tried once each (waited tries them again).
func (d *HAProxy) sendPhase(ctx context.Context, r *renewal, res *driver.Result) error {
	ph := r.phases[r.next]
	var cmds []string
	r.dels = r.dels[:0]
	for _, o := range ph.Ops {
		switch o.Kind {
		case plan.Create:
			cmds = append(cmds, createCommands(o, r.opts, r.check)...)
		case plan.Delete:
			r.dels = append(r.dels, o.Backend+"/"+o.Slot)
		default:
			cmds = append(cmds, commands([]plan.Op{o}, nil)...)
		}
	}
	if len(cmds) > 0 {
		ans, err := d.rt.ExecChecked(ctx, cmds)
		res.Ops += len(ans)
		if err != nil {
			res.OpsFailed += len(cmds) - len(ans)
			return err
		}
	}
	d.actual.Apply(ph.Ops)
	d.verify.touch(ph.Ops)
	r.up = ph.Up
	r.sent = true
	r.until = time.Now().Add(renewUp)
	if len(r.dels) > 0 {
		r.until = time.Now().Add(renewDrain)
	}
	return nil
}

// waited looks once at the waits of the phase r sent: its deletions
// tried again, its servers' checks read. It reports whether they are
// over (done, or their time is up).
func (d *HAProxy) waited(ctx context.Context, be string, r *renewal, res *driver.Result) (bool, error) {
	if len(r.dels) > 0 {
		left, err := d.deleteIdle(ctx, r.dels, r.until, res)
		r.dels = left
		if err != nil || len(left) > 0 {
			return false, err
		}
	}
	if len(r.up) == 0 {
		return true, nil
	}
	ans, err := d.rt.ExecChecked(ctx, []string{"show servers state " + be})
	res.Ops++
	if err != nil {
		return false, err
	}
	down := notRunning(ans[0], r.up)
	if len(down) > 0 && time.Now().After(r.until) {
		d.log.Warn("renewed servers not up yet; left to their check", "backend", be, "servers", down, "waited", renewUp)
		return true, nil
	}
	return len(down) == 0, nil
}

// heldForRenewal returns ops without the operations on backends being
// renewed: their slots are the renewal's until it ends, and endRenewal
// has the next pass plan them again.
func (d *HAProxy) heldForRenewal(ops []plan.Op) []plan.Op {
	if len(d.renewals) == 0 && len(d.leftTwins) == 0 {
		return ops
	}
	out := ops[:0:0]
	for _, o := range ops {
		_, renewing := d.renewals[o.Backend]
		_, left := d.leftTwins[o.Backend]
		if !renewing && !left {
			out = append(out, o)
		}
	}
	return out
}

// renewing returns the backends of foreign that are neither being
// renewed nor in touched (Verify: a renewal's twins are no foreign
// servers, nor are those of a renewal that ended during the read), and
// adds the renewing ones to touched, whose states prove nothing.
func (d *HAProxy) renewing(foreign []string, touched map[string]bool) []string {
	for be := range d.renewals {
		touched[be] = true
	}
	var out []string
	for _, be := range foreign {
		if !touched[be] {
			out = append(out, be)
		}
	}
	return out
}

// createCommands are the commands that create server o.Slot at o.Server
// with the keywords opts (HAProxy creates it in maintenance), its check
// enabled when it has one (off for a server added at runtime until then).
func createCommands(o plan.Op, opts string, withCheck bool) []string {
	addr := freeSlot.String()
	if o.Server.Addr.IsValid() {
		addr = netip.AddrPortFrom(o.Server.Addr, o.Server.Port).String()
	}
	target := o.Backend + "/" + o.Slot
	cmds := []string{"add server " + target + " " + addr + " " + opts}
	if withCheck {
		cmds = append(cmds, "enable health "+target)
	}
	return cmds
}

// takeRenew returns the CA files committed since it was last called.
func (s *certStore) takeRenew() []string {
	out := s.renew
	s.renew = nil
	return out
}

// renewCount is how many backends are being renewed (under d.mu).
func (d *HAProxy) renewCount() int { return len(d.renewals) }
