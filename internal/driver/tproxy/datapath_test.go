package tproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// The Service addresses, none of which the load balancer holds: the
// client routes them to it, TPROXY hands their connections to the one
// listener.
var (
	vipA  = netip.MustParseAddr("203.0.113.10")
	vipB  = netip.MustParseAddr("203.0.113.11")
	vipA6 = netip.MustParseAddr("2001:db8:1::10")
)

const listenPort = 15080

// dpLab is a client namespace and a load-balancer namespace (netlab), both
// families on their link, a real HAProxy in the load balancer behind the
// local HAProxy driver and this package's driver (Ordered), and four
// servers on the load balancer's loopback that answer with their name.
type dpLab struct {
	lab    *netlab.Lab
	p      *haproxytest.Process
	drv    Ordered
	hd     *runtimeapi.HAProxy // the HAProxy driver (alone in ports mode)
	ropts  render.Options
	hopts  runtimeapi.Options // of the HAProxy driver (a restart makes another)
	server map[string]uint16  // name: port on 127.0.0.1 in the LB namespace
}

func ipn(t testing.TB, ns string, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("ip -n %s %s: %v: %s", ns, strings.Join(args, " "), err, out)
	}
}

func startDP(t *testing.T) *dpLab { return startDPMode(t, render.ListenersTProxy) }

// startDPMode is startDP in a listener mode: in ports mode, HAProxy's
// driver alone (hd) and no kernel driver.
func startDPMode(t testing.TB, mode string) *dpLab { return startDPWith(t, mode, spares.Policy{}) }

// startDPWith is startDPMode with a pool of spare backends (pool.On()).
func startDPWith(t testing.TB, mode string, pool spares.Policy) *dpLab {
	t.Helper()
	return startDPOpts(t, mode, pool, false)
}

// startDPOpts is startDPWith, with the fixed HTTP listener on when http.
func startDPOpts(t testing.TB, mode string, pool spares.Policy, http bool) *dpLab {
	t.Helper()
	if _, err := os.Stat(haproxytest.Bin()); err != nil {
		t.Skip("no haproxy")
	}
	lab := netlab.New(t, 0)
	ipn(t, lab.LB, "addr", "add", "2001:db8::1/64", "dev", "c0", "nodad")
	ipn(t, lab.Client, "addr", "add", "2001:db8::2/64", "dev", "eth0", "nodad")
	ipn(t, lab.Client, "-6", "route", "add", "default", "via", "2001:db8::1")
	// The load balancer has a default route, as a host does: its own
	// clients' first route lookup must succeed before the output chain
	// marks them back to lo.
	ipn(t, lab.LB, "route", "add", "default", "via", "192.0.2.2")
	ipn(t, lab.LB, "-6", "route", "add", "default", "via", "2001:db8::2")
	l := &dpLab{lab: lab, server: map[string]uint16{}}
	for _, name := range []string{"a", "b", "c", "d"} {
		l.server[name] = answering(t, lab.LB, name)
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(haproxytest.MinimalConfig(dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	l.p = haproxytest.StartInNetNS(t, dir, cfgPath, netlab.Path(lab.LB))
	l.ropts = render.Options{StatsSocket: l.p.StatsSocket, StateFile: filepath.Join(dir, "server-state"),
		ACLDir: filepath.Join(dir, "acl"), Listeners: render.Listeners{Mode: mode, Port: listenPort, HTTP: http}}
	if http { // as the controller gives both drivers (the HAProxy driver's default): the fixed HTTPS listener too
		l.ropts.CertDir = runtimeapi.CertDir(cfgPath)
	}
	l.hopts = runtimeapi.Options{ConfigPath: cfgPath, Binary: haproxytest.Bin(),
		MasterSocket: l.p.MasterSocket, ReloadTimeout: time.Minute, Render: l.ropts, Pool: pool}
	hd := runtimeapi.NewHAProxy(l.hopts)
	t.Cleanup(func() { _ = hd.Close() })
	l.hd = hd
	if mode != render.ListenersTProxy {
		return l
	}
	k, err := New(Options{NetNS: netlab.Path(lab.LB), Render: l.ropts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	l.drv = Ordered{HAProxy: hd, Kernel: k}
	return l
}

// answering is the port of a server on 127.0.0.1 in the namespace ns
// that answers every connection with name and a newline, until the test
// ends.
func answering(t testing.TB, ns, name string) uint16 {
	t.Helper()
	return netlab.Serve(t, ns, "127.0.0.1:0", func(c net.Conn) { _, _ = c.Write([]byte(name + "\n")) }).Port()
}

func bind(a netip.Addr, port uint16) model.Bind {
	return model.Bind{Addr: a, Port: port, Transparent: true}
}

// svc is a Service port: its frontend and backend, one server.
func (l *dpLab) svc(name string, binds ...model.Bind) (model.Frontend, *model.Backend) {
	return model.Frontend{Name: "fe_" + name, Service: "default/" + name, Backend: "be_" + name, Binds: binds},
		&model.Backend{Name: "be_" + name, Balance: "roundrobin",
			Servers: []model.Server{{Addr: netip.MustParseAddr("127.0.0.1"), Port: l.server[name]}}}
}

// ask connects from ns to dst (from src when valid) and returns the
// first line answered, "" with an error when refused or closed.
func ask(ns string, src netip.Addr, dst netip.AddrPort) (string, error) {
	return netlab.AskTCP(ns, src, dst)
}

func (l *dpLab) reloads(t testing.TB) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := haproxy.NewMaster(l.p.MasterSocket).ShowProc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return p.Reloads
}

func (l *dpLab) apply(t *testing.T, cfg model.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := l.drv.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
}

// refused is expect's answer for a connection that must be refused (a
// reset to its SYN: ECONNREFUSED), where "" takes any failure.
const refused = "(refused)"

// expect polls until every case answers as it should: the server's name,
// "" for a connection that must not be served, or refused.
func expect(t *testing.T, cases map[netip.AddrPort]string, ns string, src netip.Addr) {
	t.Helper()
	for dst, want := range cases {
		err := netlab.Eventually(context.Background(), 5*time.Second, func() error {
			got, err := ask(ns, src, dst)
			if want == refused {
				if !errors.Is(err, syscall.ECONNREFUSED) {
					return fmt.Errorf("%s: got %q (%v), want the connection refused", dst, got, err)
				}
				return nil
			}
			if want == "" {
				if err == nil && got != "" {
					return fmt.Errorf("%s answered %q, want not served", dst, got)
				}
				return nil
			}
			if got != want {
				return fmt.Errorf("%s: got %q (%v), want %q", dst, got, err, want)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}
}

// TestDataPath: clients of both families reach two Services on several
// addresses and ports through the one listener; a port not served on a
// served address is refused (a reset, as where the address is bound: not
// a SYN left unanswered), but on an address the load balancer holds
// itself, whose other ports are its own services'; a client on the load
// balancer itself is served and refused alike; a new address and a new
// port of a Service are no reload; an address no longer served is no
// longer refused.
func TestDataPath(t *testing.T) {
	l := startDP(t)
	feA, beA := l.svc("a", bind(vipA, 80), bind(vipA6, 80))
	feB, beB := l.svc("b", bind(vipA, 443), bind(vipB, 80))
	// A Service on the load balancer's own address, where a service of
	// the host listens on another port.
	feC, beC := l.svc("c", bind(netlab.LBAddr, 80))
	netlab.Serve(t, l.lab.LB, netlab.LBAddr.String()+":2222", func(c net.Conn) { _, _ = c.Write([]byte("host\n")) })
	cfg := model.Config{Frontends: []model.Frontend{feA, feB, feC}, Backends: []*model.Backend{beA, beB, beC}}
	l.apply(t, cfg)
	ap := netip.AddrPortFrom
	served := map[netip.AddrPort]string{
		ap(vipA, 80): "a", ap(vipA6, 80): "a", ap(vipA, 443): "b", ap(vipB, 80): "b",
		ap(vipB, 443): refused, ap(vipA, 8080): refused, ap(vipA6, 443): refused,
		ap(netlab.LBAddr, 80): "c", ap(netlab.LBAddr, 2222): "host",
	}
	expect(t, served, l.lab.Client, netip.Addr{})
	// The load balancer's own clients (where an operator tries curl
	// first) go through the same listener.
	expect(t, served, l.lab.LB, netip.Addr{})

	before := l.reloads(t)
	// A new address of a Service, and a new port served by a backend
	// HAProxy has: a map entry and a set element each, no reload.
	more := cfg
	feA.Binds = append(feA.Binds, bind(vipB, 8080))
	feA9000 := model.Frontend{Name: "fe_a_9000", Service: "default/a", Backend: "be_a", Binds: []model.Bind{bind(vipA, 9000), bind(vipA6, 9000)}}
	more.Frontends = []model.Frontend{feA, feB, feC, feA9000}
	l.apply(t, more)
	expect(t, map[netip.AddrPort]string{ap(vipB, 8080): "a", ap(vipA, 9000): "a", ap(vipA6, 9000): "a", ap(vipA, 80): "a"}, l.lab.Client, netip.Addr{})
	if after := l.reloads(t); after != before {
		t.Errorf("a new address and port reloaded HAProxy: %d reloads, want %d", after, before)
	}
	// Taken away again: no longer served, still no reload.
	l.apply(t, cfg)
	expect(t, map[netip.AddrPort]string{ap(vipB, 8080): refused, ap(vipA, 9000): refused, ap(vipA, 80): "a"}, l.lab.Client, netip.Addr{})
	if after := l.reloads(t); after != before {
		t.Errorf("removing an address and port reloaded HAProxy: %d reloads, want %d", after, before)
	}
	// Service b gone, vipB is no longer served: none of its ports is
	// refused (the served set no longer holds it), the others still are.
	l.apply(t, model.Config{Frontends: []model.Frontend{cfg.Frontends[0], feC}, Backends: []*model.Backend{beA, beC}})
	if got := l.drv.Kernel.readBackServed(); got[vipB] || !got[vipA] || !got[vipA6] {
		t.Errorf("served addresses after b left: %v, want vipA and vipA6 and not vipB", got)
	}
	expect(t, map[netip.AddrPort]string{ap(vipA, 443): refused, ap(vipA, 80): "a"}, l.lab.Client, netip.Addr{})
}
