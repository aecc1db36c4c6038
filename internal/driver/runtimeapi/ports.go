package runtimeapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// ErrPortTaken: a frontend the reload would add listens where another
// process already does.
var ErrPortTaken = errors.New("frontend port taken by another process")

// takenBinds tries every TCP bind of cfg that running does not have, as
// HAProxy would bind it (SO_REUSEPORT, and IP_FREEBIND for a transparent
// bind), and reports those another process holds. HAProxy 2.6, reloaded
// onto such a port, pauses every listener of the serving worker while it
// retries the bind (about a second, refusing new connections on every
// frontend: docs/reliability.md) and then fails; checked here, that
// reload does not happen. Only new binds are tried: the running ones are
// HAProxy's own. Any error but "address in use" is left to HAProxy.
func takenBinds(ctx context.Context, running, cfg model.Config) error {
	have := map[model.Bind]bool{}
	for _, f := range running.Frontends {
		for _, b := range f.Binds {
			have[b] = true
		}
	}
	var taken []string
	for _, f := range cfg.Frontends {
		for _, b := range f.Binds {
			if have[b] {
				continue
			}
			if err := tryBind(ctx, b); errors.Is(err, syscall.EADDRINUSE) {
				taken = append(taken, fmt.Sprintf("%s (%s)", bindString(b), f.Service))
			}
		}
	}
	if len(taken) > 0 {
		return fmt.Errorf("%w: %s", ErrPortTaken, strings.Join(taken, ", "))
	}
	return nil
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
