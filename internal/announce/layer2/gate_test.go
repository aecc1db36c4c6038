package layer2

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// namePort is where each host's name is served behind its HAProxy
// (newGatedGroup): the client asks servePort, which HAProxy serves.
const namePort = 8081

// newGatedGroup is newGroup with a real HAProxy on each host, in the
// host's namespace, serving servePort in front of the host's name (so an
// answer from another host is that host's HAProxy answering), and each
// host's announcer behind the real health gate (announce.HealthGate on
// that HAProxy's admin socket, every announce.GateEvery, as run wires
// it). Its one fault is "haproxy killed".
func newGatedGroup(t testing.TB) *group {
	t.Helper()
	haproxies := map[string]*haproxytest.Process{}
	g := newHostsWith(t, func(g *group, h *netlab.Host) {
		netlab.ServeName(t, h, namePort)
		haproxies[h.Name] = startHAProxy(t, h)
	})
	g.haproxies = haproxies
	return startGroup(t, g, Config{}, func(h *netlab.Host) string { return haproxies[h.Name].StatsSocket })
}

// startHAProxy runs HAProxy in h's namespace: servePort (IPv4 and IPv6,
// every address, the virtual ones too) forwarded to the host's name.
func startHAProxy(t testing.TB, h *netlab.Host) *haproxytest.Process {
	t.Helper()
	// a short directory: Unix socket paths are at most 107 bytes
	dir, err := os.MkdirTemp("", "l2h-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cfg := haproxytest.MinimalConfig(dir) + fmt.Sprintf(`
frontend name
    bind :::%d v4v6
    default_backend name

backend name
    server self 127.0.0.1:%d
`, servePort, namePort)
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return haproxytest.StartInNetNS(t, dir, path, netlab.Path(h.NS))
}

// killHAProxy is the "haproxy killed" fault: SIGKILL of h's HAProxy,
// master and worker (on), or HAProxy started again (off). The host's
// announcer keeps running: only its health gate can let go.
func (g *group) killHAProxy(h *netlab.Host, on bool) error {
	p := g.haproxies[h.Name]
	if on {
		p.Kill(g.t)
	} else {
		p.Restart(g.t)
	}
	if g.t.Failed() {
		return fmt.Errorf("HAProxy of %s not killed or restarted", h.Name)
	}
	return nil
}

// TestFailoverHAProxyKilled: the owner's HAProxy killed (its announcer
// alive), the real health gate fails on the refused admin socket and the
// owner lets its address go: another host's HAProxy answers for it, one
// trial each for IPv4 and IPv6 (`make failover` runs 20,
// BenchmarkFailover).
func TestFailoverHAProxyKilled(t *testing.T) {
	g := newGatedGroup(t)
	g.window = 5 * time.Second // the gate sees a kill within a tick or two
	for _, vip := range []netip.Addr{vip4, vip6} {
		took, err := g.failover(vip, g.faults()["haproxy killed"])
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: answered by another host %s after its owner's HAProxy was killed", vip, took)
	}
}
