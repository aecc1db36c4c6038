package nft

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/vishvananda/netns"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/netnsrun"
)

// nsHandle is a network namespace the driver works in; fd -1 is the
// controller's own (the usual deployment: host network).
type nsHandle struct{ f *os.File }

func openNS(path string) (nsHandle, error) {
	if path == "" {
		return nsHandle{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nsHandle{}, fmt.Errorf("network namespace: %w", err)
	}
	return nsHandle{f}, nil
}

func (n nsHandle) fd() int {
	if n.f == nil {
		return -1
	}
	return int(n.f.Fd())
}

func (n nsHandle) close() {
	if n.f != nil {
		n.f.Close()
	}
}

// do runs fn on an OS thread that is in the namespace (netnsrun.Do).
func (n nsHandle) do(fn func() error) error {
	if n.f == nil {
		return fn()
	}
	return netnsrun.Do(netns.NsHandle(n.fd()), fn)
}

// dial connects from inside the namespace.
func (n nsHandle) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.do(func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// ErrForwarding: IP forwarding is off and may not be turned on.
var ErrForwarding = errors.New("IP forwarding is off")

// forwarding makes sure the kernel forwards IPv4 (and IPv6 when v6)
// packets: it turns it on when enable (the documented deployment: a
// load-balancer host or its network namespace, where the controller
// owns forwarding), and otherwise fails with ErrForwarding.
func (n nsHandle) forwarding(enable, v6 bool) error {
	files := []string{"/proc/sys/net/ipv4/ip_forward"}
	if v6 {
		files = append(files, "/proc/sys/net/ipv6/conf/all/forwarding")
	}
	return n.do(func() error {
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			if strings.TrimSpace(string(b)) == "1" {
				continue
			}
			if !enable {
				return fmt.Errorf("%w (%s is %s): UDP load balancing forwards packets; turn it on (sysctl) or pass --udp-ip-forward=enable",
					ErrForwarding, strings.TrimPrefix(f, "/proc/sys/"), strings.TrimSpace(string(b)))
			}
			if err := os.WriteFile(f, []byte("1\n"), 0o644); err != nil {
				return fmt.Errorf("turning on %s: %w", f, err)
			}
		}
		return nil
	})
}

// HasNetAdmin reports whether this process has CAP_NET_ADMIN in effect.
func HasNetAdmin() bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<12) != 0 // CAP_NET_ADMIN
		}
	}
	return false
}
