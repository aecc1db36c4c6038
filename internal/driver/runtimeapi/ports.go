package runtimeapi

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/netip"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// ErrPortTaken: a frontend the reload would add listens where another
// process already does.
var ErrPortTaken = errors.New("frontend port taken by another process")

// withoutTaken tries every TCP bind of cfg that running does not have,
// as HAProxy would bind it (SO_REUSEPORT, and IP_FREEBIND for a
// transparent bind), and leaves out of cfg each frontend with a bind
// another process holds, with its backends when no other frontend uses
// them; each left out is a Refusal (reason PortTaken, its error
// ErrPortTaken). HAProxy 2.6, reloaded onto such a port, pauses every
// listener of the serving worker while it retries the bind (about a
// second, refusing new connections on every frontend:
// docs/reliability.md) and then fails, and the whole change with it;
// without that frontend, the rest of the change applies and the Service
// waits alone until its port is free (every pass tries it again). Only
// new binds are tried: the running ones are HAProxy's own. Any error but
// "address in use" is left to HAProxy. A frontend that listened reports
// true for binds nothing (the tproxy listener serves it): it is not tried.
// With fronts saying which frontends of cfg changed against running's
// (the pool's view, model.FrontendChanges), only those are looked at.
func withoutTaken(ctx context.Context, running, cfg model.Config, fronts *model.FrontendChanges,
	listened func(model.Frontend) bool) (model.Config, []driver.Refusal) {
	var have map[model.Bind]bool // made at the first frontend that binds: behind the fixed listener, none
	var refused []driver.Refusal
	drop := map[int]bool{}
	for i := range changedFrontends(running.Frontends, cfg.Frontends, fronts) {
		f := cfg.Frontends[i]
		if listened(f) {
			continue
		}
		if have == nil {
			have = map[model.Bind]bool{}
			for _, f := range running.Frontends {
				for _, b := range f.Binds {
					have[b] = true
				}
			}
		}
		var taken []string
		for _, b := range f.Binds {
			if have[b] {
				continue
			}
			if err := tryBind(ctx, b); errors.Is(err, syscall.EADDRINUSE) {
				taken = append(taken, bindString(b))
			}
		}
		if len(taken) > 0 {
			drop[i] = true
			err := fmt.Errorf("%w: %s (frontend %s) left out until it is free", ErrPortTaken, strings.Join(taken, ", "), f.Name)
			refused = append(refused, driver.Refusal{Service: f.Service, Reason: "PortTaken", Err: err})
		}
	}
	if len(drop) == 0 {
		return cfg, nil
	}
	kept := make([]model.Frontend, 0, len(cfg.Frontends)-len(drop))
	used, unused := map[string]bool{}, map[string]bool{}
	for i, f := range cfg.Frontends {
		mark := used
		if drop[i] {
			mark = unused
		} else {
			kept = append(kept, f)
		}
		mark[f.Backend] = true
		for _, r := range f.Routes {
			for _, wb := range r.Backends {
				mark[wb.Name] = true
			}
		}
	}
	backends := make([]*model.Backend, 0, len(cfg.Backends))
	for _, be := range cfg.Backends {
		if !unused[be.Name] || used[be.Name] {
			backends = append(backends, be)
		}
	}
	out := cfg
	out.Frontends, out.Backends, out.Changes = kept, backends, nil // Changes' indices are cfg's
	return out, refused
}

// noteRefused logs what a pass left out when it differs from the last
// pass's (the controller also writes Events; the gateway mode reads only
// this log).
func (d *HAProxy) noteRefused(refused []driver.Refusal) {
	var msgs []string
	for _, r := range refused {
		msgs = append(msgs, r.Err.Error())
	}
	now := strings.Join(msgs, "; ")
	if now != d.refusedLast && now != "" {
		d.log.Warn("left out of HAProxy until the port is free", "refused", now)
	}
	d.refusedLast = now
}

func tryBind(ctx context.Context, b model.Bind) error {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			if serr == nil && b.Transparent {
				level, opt := unix.SOL_IP, unix.IP_FREEBIND
				if b.Addr.Is6() {
					level, opt = unix.SOL_IPV6, unix.IPV6_FREEBIND
				}
				serr = unix.SetsockoptInt(int(fd), level, opt, 1)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	l, err := lc.Listen(ctx, "tcp", bindString(b))
	if err != nil {
		return err
	}
	return l.Close()
}

func bindString(b model.Bind) string {
	if !b.Addr.IsValid() {
		return fmt.Sprintf(":%d", b.Port)
	}
	return netip.AddrPortFrom(b.Addr, b.Port).String()
}

// changedFrontends yields the index of each frontend of cfg that is not,
// by name, the same (model.SameFrontend) as running's: running as it is,
// every bind of it runs (issue 29: listened not asked of 10,000). With
// fronts made from running's very Frontends, only the frontends it names
// are looked at; otherwise both are walked, sorted by name as a Config's
// are.
func changedFrontends(running, cfg []model.Frontend, fronts *model.FrontendChanges) iter.Seq[int] {
	return func(yield func(int) bool) {
		if names, ok := fronts.ChangedFrom(cfg, running); ok {
			for _, name := range names {
				i, now := model.FrontendIndex(cfg, name)
				if !now {
					continue // gone
				}
				if j, was := model.FrontendIndex(running, name); was && model.SameFrontend(&cfg[i], &running[j]) {
					continue
				}
				if !yield(i) {
					return
				}
			}
			return
		}
		j := 0 // running's frontend of f's name
		for i := range cfg {
			f := &cfg[i]
			for j < len(running) && running[j].Name < f.Name {
				j++
			}
			if j < len(running) && model.SameFrontend(f, &running[j]) {
				continue
			}
			if !yield(i) {
				return
			}
		}
	}
}
