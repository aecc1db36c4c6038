package runtimeapi

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
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
// The waits are bounded: a server still holding connections after
// renewDrain has them shut (`shutdown sessions server`), and a server
// whose check has not passed after renewUp is left to its check (the
// bundle asked for is what verifies, whatever it lets in). A renewal cut
// short by an error is followed by a reload (renewFailed), which rebuilds
// the backend from the files: they hold the new bundle already.

// renewFailed stands for the structure hash after a renewal cut short.
const renewFailed = "(servers renewed for a CA in doubt)"

// renewDrain and renewUp bound a renewal's waits; renewPoll is how often
// it looks.
var (
	renewDrain = 10 * time.Second
	renewUp    = 15 * time.Second
	renewPoll  = 50 * time.Millisecond
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

// renewServers renews the servers of the backends of cfg that name one of
// the CA files applyCAs just committed (paths), in cfg's order. Under d.mu,
// after the pass's operations: d.actual is what the worker runs.
func (d *HAProxy) renewServers(ctx context.Context, cfg model.Config, paths []string, res *driver.Result) error {
	if len(paths) == 0 {
		return nil
	}
	n, t := 0, time.Now()
	for _, be := range cfg.Backends {
		if !renewable(be) || !slices.Contains(paths, render.CAFile(d.opts.Render.CertDir, be.TLS.CA)) || len(d.actual[be.Name]) == 0 {
			continue
		}
		if err := d.renewBackend(ctx, be, res); err != nil {
			// Slots may be missing or twins left: the next pass
			// reloads, from files that hold the new bundle already.
			d.hash, d.optsReason = renewFailed, "servers renewed for a CA in doubt"
			return fmt.Errorf("renewing the servers of %s for its CA: %w", be.Name, err)
		}
		n++
	}
	if n > 0 {
		d.log.Info("servers created again for a new CA bundle, without reload", "backends", n, "took", time.Since(t))
	}
	return nil
}

// renewBackend sends the phases of be's renewal, from the slots' states
// in d.actual, waiting as each phase says.
func (d *HAProxy) renewBackend(ctx context.Context, be *model.Backend, res *driver.Result) error {
	opts := strings.Join(render.RenewOptions(be, d.opts.Render), " ")
	withCheck := be.Check.Enabled
	t := time.Now()
	defer func() { res.Runtime += time.Since(t) }()
	for _, ph := range plan.Renew(be.Name, slices.Clone(d.actual[be.Name]), withCheck) {
		var cmds []string
		var dels []string
		for _, o := range ph.Ops {
			switch o.Kind {
			case plan.Create:
				cmds = append(cmds, createCommands(o, opts, withCheck)...)
			case plan.Delete:
				dels = append(dels, o.Backend+"/"+o.Slot)
			default:
				cmds = append(cmds, commands([]plan.Op{o})...)
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
		for _, srv := range dels {
			if err := d.deleteWhenIdle(ctx, srv, res); err != nil {
				return err
			}
		}
		d.actual.Apply(ph.Ops)
		if len(ph.Up) > 0 {
			if err := d.waitUp(ctx, be.Name, ph.Up); err != nil {
				return err
			}
		}
	}
	return nil
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

// deleteWhenIdle deletes server srv ("backend/server", in maintenance),
// asking again every renewPoll while HAProxy refuses because connections
// remain; after renewDrain they are shut and it asks once more.
func (d *HAProxy) deleteWhenIdle(ctx context.Context, srv string, res *driver.Result) error {
	del := []string{"del server " + srv}
	end := time.Now().Add(renewDrain)
	for {
		_, err := d.rt.ExecChecked(ctx, del)
		res.Ops++
		var ce *haproxy.CommandError
		switch {
		case err == nil:
			return nil
		case !errors.As(err, &ce):
			return err // the socket, not the answer
		case time.Now().After(end):
			d.log.Warn("server still has connections after the drain; shutting them", "server", srv, "drain", renewDrain)
			if _, err := d.rt.ExecChecked(ctx, []string{"shutdown sessions server " + srv}); err != nil {
				return err
			}
			_, err := d.rt.ExecChecked(ctx, del)
			res.Ops += 2
			return err
		}
		// Connections that went idle after the server entered
		// maintenance stay in its pool until purged (seen on 2.6.12:
		// more than 10 s); entering maintenance again drops them.
		if err := d.dropIdle(ctx, srv, res); err != nil {
			return err
		}
		if err := sleepCtx(ctx, renewPoll); err != nil {
			return err
		}
	}
}

// dropIdle puts server srv ("backend/server", in maintenance) into drain
// and back into maintenance when it has idle connections and none in use:
// entering maintenance drops a server's idle connections (drain takes no
// new connection from the balancing).
func (d *HAProxy) dropIdle(ctx context.Context, srv string, res *driver.Result) error {
	be, _, _ := strings.Cut(srv, "/")
	ans, err := d.rt.ExecChecked(ctx, []string{"show servers conn " + be})
	res.Ops++
	if err != nil {
		return err
	}
	if used, idle := serverConns(ans[0], srv); used != 0 || idle == 0 {
		return nil
	}
	_, err = d.rt.ExecChecked(ctx, []string{"set server " + srv + " state drain", "set server " + srv + " state maint"})
	res.Ops += 2
	return err
}

// serverConns reads the connections in use and idle of server srv
// ("backend/server") from `show servers conn`'s answer (-1: not listed).
func serverConns(answer, srv string) (used, idle int) {
	for _, line := range strings.Split(answer, "\n") {
		// bkname/svname bkid/svid addr port - purge_delay used_cur
		// used_max need_est unsafe_nb safe_nb idle_lim idle_cur ...
		f := strings.Fields(line)
		if len(f) > 12 && f[0] == srv {
			u, err1 := strconv.Atoi(f[6])
			i, err2 := strconv.Atoi(f[12])
			if err1 == nil && err2 == nil {
				return u, i
			}
		}
	}
	return -1, -1
}

// waitUp waits until the servers names of backend be are running (their
// check passed), for at most renewUp; past that it logs the servers still
// down and goes on.
func (d *HAProxy) waitUp(ctx context.Context, be string, names []string) error {
	end := time.Now().Add(renewUp)
	for {
		ans, err := d.rt.ExecChecked(ctx, []string{"show servers state " + be})
		if err != nil {
			return err
		}
		down := notRunning(ans[0], names)
		if len(down) == 0 {
			return nil
		}
		if time.Now().After(end) {
			d.log.Warn("renewed servers not up yet; left to their check", "backend", be, "servers", down, "waited", renewUp)
			return nil
		}
		if err := sleepCtx(ctx, renewPoll); err != nil {
			return err
		}
	}
}

// notRunning lists the names among names that `show servers state`'s
// answer does not report running (srv_op_state 2).
func notRunning(answer string, names []string) []string {
	running := map[string]bool{}
	for _, line := range strings.Split(answer, "\n") {
		f := strings.Fields(line)
		// be_id be_name srv_id srv_name srv_addr srv_op_state ...
		if len(f) > 5 && !strings.HasPrefix(f[0], "#") && f[5] == "2" {
			running[f[3]] = true
		}
	}
	var out []string
	for _, n := range names {
		if !running[n] {
			out = append(out, n)
		}
	}
	return out
}

// sleepCtx waits for d or the end of ctx.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// takeRenew returns the CA files committed since it was last called.
func (s *certStore) takeRenew() []string {
	out := s.renew
	s.renew = nil
	return out
}
