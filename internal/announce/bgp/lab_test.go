package bgp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/proc"
)

// The addresses the hosts serve, the port they answer on, and the AS
// numbers of the hosts and the router.
var (
	vip4  = netip.MustParseAddr("198.51.100.10")
	vip4b = netip.MustParseAddr("198.51.100.11")
	vip6  = netip.MustParseAddr("2001:db8:ff::10")
)

const (
	servePort = 8080
	hostASN   = 65001
	routerASN = 65000
)

// speakerEnv names, in a child of the test binary, the file of the
// speaker it runs (TestMain): each speaker is a process of its own inside
// its host's network namespace, since GoBGP opens its sockets on threads
// of its own (a process in the namespace is the only way every one of
// them is there), and a restart of the controller is a restart of a
// process.
const speakerEnv = "HKS_BGP_SPEAKER"

// speakerFile is what the child reads: its Config (less the logger and
// the metrics), and the file holding its Want, read again on SIGHUP.
type speakerFile struct {
	Config
	WantFile string
	// AdvertisedFile, when set, is where the child writes what it
	// advertises to which router (Advertised, as JSON) every 50 ms
	AdvertisedFile string
	// RefusedFile, when set, is where the child writes the refusals it
	// was told (refused_test.go)
	RefusedFile string
}

func TestMain(m *testing.M) {
	if f := os.Getenv(speakerEnv); f != "" {
		os.Exit(speakerMain(f))
	}
	os.Exit(m.Run())
}

// speakerMain runs one speaker until SIGTERM (its graceful stop).
func speakerMain(file string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var sf speakerFile
	b, err := os.ReadFile(file)
	if err == nil {
		err = json.Unmarshal(b, &sf)
	}
	if err != nil {
		log.Error("speaker file", "error", err)
		return 1
	}
	cfg := sf.Config
	cfg.Logger, cfg.Metrics = log, nil
	var rec *heldRecorder
	if sf.AdvertisedFile != "" {
		rec = &heldRecorder{}
		cfg.Metrics = rec
	}
	if sf.RefusedFile != "" {
		r := &refusals{file: sf.RefusedFile}
		cfg.Metrics = r
		cfg.OnRefused = func(x Refusal) { r.told(x.Message(cfg.RouterID)) }
	}
	a, err := New(cfg)
	if err != nil {
		log.Error("config", "error", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	read := func() {
		var w announce.Want
		b, err := os.ReadFile(sf.WantFile)
		if err == nil {
			err = json.Unmarshal(b, &w)
		}
		if err != nil {
			log.Error("want file", "error", err)
			return
		}
		a.Set(w)
	}
	read()
	go func() {
		for range hup {
			read()
		}
	}()
	if sf.AdvertisedFile != "" {
		go writeAdvertised(ctx, a, rec, sf.AdvertisedFile)
	}
	go logStalls(ctx, log)
	if err := a.Run(ctx); err != nil {
		log.Error("run", "error", err)
		return 1
	}
	return 0
}

// logStalls logs every time this process woke more than 100 ms late
// from a 10 ms sleep (the machine did not run it: a BFD session at
// 100 ms x 3 cannot survive a stall of 300 ms), so that a failed test's
// speaker log shows whether its BFD sessions went down on a stall.
func logStalls(ctx context.Context, log *slog.Logger) {
	for ctx.Err() == nil {
		t := time.Now()
		time.Sleep(10 * time.Millisecond) // the probe itself: how late this wakes is what is measured
		if late := time.Since(t) - 10*time.Millisecond; late > 100*time.Millisecond {
			log.Warn("stalled: this process woke late", "late", late.Round(time.Millisecond))
		}
	}
}

// lab is a router running BIRD 2 and load-balancer hosts running our
// speaker, each in its own namespace on one segment. The router is the
// client too: it dials the addresses through the routes it learned.
type lab struct {
	t      testing.TB
	dir    string
	seg    *netlab.Segment
	router *netlab.Host
	lbs    []*netlab.Host
	bird   *proc.Process
	sock   string
	spk    map[string]*proc.Process
	opts   birdOpts
	// vtysh asks the router's FRR (newFRRLab)
	vtysh func(cmd string) (string, error)
}

// birdBin finds BIRD or skips.
func birdBin(t testing.TB) (bird, birdc string) {
	for _, name := range []string{"bird", "birdc"} {
		if _, err := exec.LookPath(name); err != nil {
			if _, err := os.Stat("/usr/sbin/" + name); err != nil {
				t.Skip("no BIRD 2 (apt-get install bird2; make deps)")
			}
		}
	}
	return "/usr/sbin/bird", "/usr/sbin/birdc"
}

// birdOpts is how the router peers with the hosts.
type birdOpts struct {
	password string
	bfd      time.Duration // 0: no BFD
	ipv6     bool          // the sessions over IPv6 (else IPv4)
	v4over6  bool          // with ipv6, the IPv4 routes too (extended next hop)
	noKernel bool          // BIRD leaves the router's IPv4 kernel table alone
}

// newLab builds the segment (the router first, then n hosts, each
// serving the addresses on its loopback) and starts BIRD on the router.
func newLab(t testing.TB, n int, o birdOpts) *lab {
	t.Helper()
	bird, _ := birdBin(t)
	l := newHostsLab(t, n, o)
	l.sock = filepath.Join(l.dir, "bird.ctl")
	conf := filepath.Join(l.dir, "bird.conf")
	if err := os.WriteFile(conf, []byte(l.birdConfig(o)), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := proc.Start("bird", filepath.Join(l.dir, "bird.log"), "ip", proc.Options{},
		"netns", "exec", l.router.NS, bird, "-f", "-c", conf, "-s", l.sock, "-P", filepath.Join(l.dir, "bird.pid"))
	if err != nil {
		t.Fatal(err)
	}
	l.bird = p
	t.Cleanup(func() {
		p.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("bird:\n%s", p.Tail(40))
		}
	})
	if err := proc.WaitFor(10*time.Second, 50*time.Millisecond, p, func() error { _, err := l.birdc("show", "status"); return err }); err != nil {
		t.Fatal(err)
	}
	return l
}

// newHostsLab builds the segment: the router first (no routing daemon
// yet), then n hosts, each serving the addresses on its loopback.
func newHostsLab(t testing.TB, n int, o birdOpts) *lab {
	t.Helper()
	names := []string{"router"}
	for i := 1; i <= n; i++ {
		names = append(names, fmt.Sprintf("lb%d", i))
	}
	seg := netlab.NewSegment(t, names...)
	l := &lab{t: t, dir: t.TempDir(), seg: seg, router: seg.Hosts[0], lbs: seg.Hosts[1:], spk: map[string]*proc.Process{}, opts: o}
	// new connections from the router spread over equal paths by port
	seg.Sysctl(l.router, "net.ipv4.fib_multipath_hash_policy", "1")
	seg.Sysctl(l.router, "net.ipv6.fib_multipath_hash_policy", "1")
	for _, h := range l.lbs {
		for _, a := range []netip.Addr{vip4, vip4b, vip6} {
			pfx := netip.PrefixFrom(a, a.BitLen()).String()
			if out, err := exec.Command("ip", "-n", h.NS, "addr", "add", pfx, "dev", "lo").CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
		}
		netlab.ServeName(t, h, servePort)
	}
	return l
}

// start runs a speaker on h (again, when it ran before) with the options
// of base and the Want w.
func (l *lab) start(h *netlab.Host, base speakerFile, w announce.Want) {
	l.t.Helper()
	sf := base
	sf.RouterID = h.Addr
	if sf.ASN == 0 {
		sf.ASN = hostASN
	}
	sf.Peers = []Peer{{Addr: l.routerAddr(), ASN: routerASN}}
	if sf.HoldTime == 0 {
		sf.HoldTime = MinHoldTime
	}
	sf.WantFile = filepath.Join(l.dir, h.Name+".want")
	l.setWant(h, sf.WantFile, w)
	file := filepath.Join(l.dir, h.Name+".speaker")
	b, err := json.Marshal(sf)
	if err != nil {
		l.t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		l.t.Fatal(err)
	}
	env := append(os.Environ(), speakerEnv+"="+file)
	p, err := proc.Start("speaker "+h.Name, filepath.Join(l.dir, h.Name+".log"), "ip", proc.Options{Env: env, Append: true},
		"netns", "exec", h.NS, os.Args[0], "-test.run=^$")
	if err != nil {
		l.t.Fatal(err)
	}
	l.spk[h.Name] = p
	l.t.Cleanup(func() {
		p.Stop(5 * time.Second)
		if l.t.Failed() {
			l.t.Logf("speaker %s:\n%s", h.Name, p.Tail(30))
		}
	})
}

// set changes the Want of h's speaker (written, then SIGHUP).
func (l *lab) set(h *netlab.Host, w announce.Want) {
	l.t.Helper()
	l.setWant(h, filepath.Join(l.dir, h.Name+".want"), w)
	if p := l.spk[h.Name]; p != nil && !p.Exited() {
		if err := p.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			l.t.Fatal(err)
		}
	}
}

func (l *lab) setWant(h *netlab.Host, file string, w announce.Want) {
	l.t.Helper()
	b, _ := json.Marshal(w)
	if err := atomicfile.Write(file, b, 0o600); err != nil {
		l.t.Fatal(err)
	}
}

// ask opens one TCP connection from the router to a and returns the
// name of the host that answered.
func (l *lab) ask(a netip.Addr, timeout time.Duration) (string, error) {
	return netlab.AskName(l.router.NS, netip.AddrPortFrom(a, servePort), timeout)
}

// waitRoutes polls until the router's paths for a are exactly via (the
// best first when best), or fails after timeout.
func (l *lab) waitRoutes(a netip.Addr, timeout time.Duration, via ...*netlab.Host) error {
	return netlab.Eventually(context.Background(), timeout, func() error {
		rs, err := l.routes(a)
		if err != nil {
			return err
		}
		if len(rs) != len(via) {
			return fmt.Errorf("%s: routes %v, want via %v", a, rs, names(via))
		}
		for _, h := range via {
			found := false
			for _, r := range rs {
				found = found || r.via == l.hostAddr(h)
			}
			if !found {
				return fmt.Errorf("%s: routes %v, want via %v", a, rs, names(via))
			}
		}
		return nil
	})
}

func names(hs []*netlab.Host) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Name)
	}
	return out
}

// waitNexthops polls until the router's kernel route for a goes exactly
// via the hosts given (in any order).
func (l *lab) waitNexthops(a netip.Addr, timeout time.Duration, via ...*netlab.Host) error {
	return netlab.Eventually(context.Background(), timeout, func() error {
		hops, err := l.nexthops(a)
		if err != nil {
			return err
		}
		if len(hops) != len(via) {
			return fmt.Errorf("%s: kernel next hops %v, want %v", a, hops, names(via))
		}
		for _, h := range via {
			if !slices.Contains(hops, l.hostAddr(h)) {
				return fmt.Errorf("%s: kernel next hops %v, want %v", a, hops, names(via))
			}
		}
		return nil
	})
}

// stays checks, for d, every 100 ms, that the router keeps a's route
// via h and that h answers a new connection to a.
func (l *lab) stays(a netip.Addr, d time.Duration, h *netlab.Host) error {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		rs, err := l.routes(a)
		if err != nil {
			return err
		}
		if len(rs) != 1 || rs[0].via != l.hostAddr(h) {
			return fmt.Errorf("%s: routes %v, want via %s", a, rs, h.Name)
		}
		if name, err := l.ask(a, time.Second); err != nil || name != h.Name {
			return fmt.Errorf("%s answered by %q (%v), want %s", a, name, err, h.Name)
		}
		time.Sleep(100 * time.Millisecond) // the pace of the checks, not a wait for anything
	}
	return nil
}
