package runtimeapi

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A new frontend on a port another process holds (a listener without
// SO_REUSEPORT, as most programs open) is reported before any reload; a
// free port, a port the running config already binds and a port held
// with SO_REUSEPORT (HAProxy's own sockets) are not.
func TestTakenBinds(t *testing.T) {
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otherPort := uint16(other.Addr().(*net.TCPAddr).Port)
	shared, err := (&net.ListenConfig{Control: reusePort}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	sharedPort := uint16(shared.Addr().(*net.TCPAddr).Port)
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := uint16(free.Addr().(*net.TCPAddr).Port)
	free.Close()

	lo := netip.MustParseAddr("127.0.0.1")
	fe := func(svc string, port uint16) model.Frontend {
		return model.Frontend{Name: svc, Service: "default/" + svc, Binds: []model.Bind{{Addr: lo, Port: port}}}
	}
	tests := []struct {
		name      string
		running   []model.Frontend
		want      []model.Frontend
		wantTaken bool
	}{
		{"free port", nil, []model.Frontend{fe("a", freePort)}, false},
		{"taken by another process", nil, []model.Frontend{fe("a", freePort), fe("b", otherPort)}, true},
		{"already ours", []model.Frontend{fe("b", otherPort)}, []model.Frontend{fe("b", otherPort)}, false},
		{"held with SO_REUSEPORT", nil, []model.Frontend{fe("c", sharedPort)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := takenBinds(context.Background(), model.Config{Frontends: tc.running}, model.Config{Frontends: tc.want})
			if got := errors.Is(err, ErrPortTaken); got != tc.wantTaken {
				t.Fatalf("takenBinds: %v, want taken=%v", err, tc.wantTaken)
			}
		})
	}
}

func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}
