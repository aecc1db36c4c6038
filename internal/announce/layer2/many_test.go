package layer2

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// manyAddrs are n IPv6 addresses on the segment's prefix
// (2001:db8::1:0 and up).
func manyAddrs(n int) []netip.Addr {
	out := make([]netip.Addr, n)
	for i := range out {
		out[i] = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 13: 1, 14: byte(i >> 8), 15: byte(i)})
	}
	return out
}

// TestFailoverManyAddresses: 500 addresses held by one host move at once
// when it freezes: the two others take 250 each and the client, which
// had reached every one of them on the frozen host (its neighbour cache
// holding them all), reaches every one on its new owner within 5 s
// (the unsolicited advertisements override its entries; its own probing
// would take tens of seconds: BenchmarkFailoverDeafClient). IPv6 (NDP),
// the same code path as ARP. Before the freeze, with all 500 on one
// host, nothing moves: the heartbeats keep their time however long the
// interface's work takes (iface.go; when that work was done inside the
// heartbeat loop, steps of 100-570 ms under load made the hosts take
// each other for dead and the addresses thrashed between them).
//
// Each host is a process of its own (hostproc_test.go), as on real
// machines: when the three hosts and the client were one process, a
// loaded machine (load 29-50) starved it, and a host's own steps of
// 300-600 ms were a real silence to its peers (2 of 10 runs failed); now
// a stall is its host's alone, and the test runs in make test.
func TestFailoverManyAddresses(t *testing.T) {
	const n = 500
	many := manyAddrs(n)
	var moves atomic.Int64
	steps := &lateSteps{}
	var whyMu sync.Mutex
	why := map[string]int{} // the moves by why, after the group settled on lb1
	counting := atomic.Bool{}
	cfg := Config{OnMove: func(m announce.Move) {
		moves.Add(1)
		if counting.Load() {
			whyMu.Lock()
			why[m.Why+" from "+strings.Join(m.From, ",")+" to "+strings.Join(m.To, ",")]++
			whyMu.Unlock()
		}
	}, Logger: slog.New(steps)}
	// HKS_FAILOVER_MISSES: a host is dead after that many intervals of
	// silence (default 3: 300 ms), to tell a starved machine from the
	// announcer's own delays
	if k, err := strconv.Atoi(os.Getenv("HKS_FAILOVER_MISSES")); err == nil && k > 0 {
		cfg.Misses = k
	}
	g := newGroup(t, cfg, many...)
	lb1, lb2, lb3 := g.lbs[0], g.lbs[1], g.lbs[2]
	// lb1 alone is healthy and takes them all; the others come back and
	// take nothing (sticky)
	for _, h := range []*netlab.Host{lb2, lb3} {
		if err := g.healthy(h, false); err != nil {
			t.Fatal(err)
		}
	}
	// load is how many of many each of hosts holds; an address held by
	// none or by several of them is an error
	load := func(hosts ...*netlab.Host) (map[string]int, error) {
		by := map[netip.Addr][]string{}
		for _, h := range hosts {
			held, err := g.holds(h.Name)
			if err != nil {
				return nil, err
			}
			for _, a := range held {
				by[a] = append(by[a], h.Name)
			}
		}
		out := map[string]int{}
		for _, a := range many {
			if len(by[a]) != 1 {
				return nil, fmt.Errorf("%s held by %v", a, by[a])
			}
			out[by[a][0]]++
		}
		return out, nil
	}
	heldBy := func(want ...string) error {
		l, err := load(g.lbs...)
		if err != nil {
			return err
		}
		for h := range l {
			if !slices.Contains(want, h) {
				return fmt.Errorf("held %v, want by %v only", l, want)
			}
		}
		return nil
	}
	if err := netlab.Eventually(context.Background(), 20*time.Second, func() error { return heldBy(lb1.Name) }); err != nil {
		t.Fatal(err)
	}
	for _, h := range []*netlab.Host{lb2, lb3} {
		if err := g.healthy(h, true); err != nil {
			t.Fatal(err)
		}
	}
	// still all on lb1 (polled: on a starved machine a heartbeat of
	// lb1's may come after the hold time, and the others take its
	// addresses until they hear it again and let go: docs/addresses.md,
	// a partition healing), and the client reaches each there (and so
	// has a neighbour entry for each)
	if err := netlab.Eventually(context.Background(), 10*time.Second, func() error { return heldBy(lb1.Name) }); err != nil {
		t.Fatalf("after the others returned: %v", err)
	}
	steadyMoves := moves.Load()
	counting.Store(true)
	whys := func() string { whyMu.Lock(); defer whyMu.Unlock(); return fmt.Sprint(why) }
	steadyAt := time.Now()
	if err := g.askAll(many, 20*time.Second, func(a netip.Addr, name string) bool { return name == lb1.Name }); err != nil {
		t.Fatalf("%v (%d moves heard meanwhile %s; %s; %s)", err, moves.Load()-steadyMoves, whys(), steps, udpDrops(g.lbs))
	}
	// all on lb1, the others healthy: nothing moves while the client
	// asks each address and for a while after (two renewals of the
	// lifetimes at least; each host counts every move it hears)
	for time.Since(steadyAt) < 4*time.Second {
		if m := moves.Load() - steadyMoves; m != 0 {
			t.Fatalf("%d moves heard in the %s the 500 addresses sat on %s, want none (%s; %s; %s)",
				m, time.Since(steadyAt).Round(time.Millisecond), lb1.Name, whys(), steps, udpDrops(g.lbs))
		}
		time.Sleep(50 * time.Millisecond) // the pace of the check, not a wait for an event
	}
	t.Logf("no move in %s with the 500 addresses on %s; %s", time.Since(steadyAt).Round(time.Millisecond), lb1.Name, steps)
	start := time.Now()
	if err := g.seg.Freeze(lb1, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.seg.Freeze(lb1, false) })
	took := make([]time.Duration, 0, n)
	var mu sync.Mutex
	err := g.askAll(many, 5*time.Second, func(a netip.Addr, name string) bool {
		if name == lb1.Name {
			return false
		}
		mu.Lock()
		took = append(took, time.Since(start))
		mu.Unlock()
		return true
	})
	if err != nil {
		t.Fatalf("%d of %d answered by another host within 5 s: %v", len(took), n, err)
	}
	slices.Sort(took)
	t.Logf("%d addresses: each answered by its new owner %s (p50) / %s (p95) / %s (max) after the freeze",
		n, took[n/2].Round(time.Millisecond), took[n*95/100].Round(time.Millisecond), took[n-1].Round(time.Millisecond))
	// lb1, frozen, still holds them (it hears nobody: its frames go
	// nowhere); each has one owner among the others, half each
	if l, err := load(lb2, lb3); err != nil || l[lb2.Name] != n/2 || l[lb3.Name] != n/2 {
		t.Fatalf("load %v (%v), want %d each on lb2 and lb3", l, err, n/2)
	}
}

// askAll has the client ask every address until ok says its answer is
// the one wanted (a new connection each time, 250 ms to answer, 8 at
// once), or fails after within naming one address not answered so.
func (g *group) askAll(addrs []netip.Addr, within time.Duration, ok func(a netip.Addr, name string) bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	work := make(chan netip.Addr)
	var mu sync.Mutex
	var failed []string
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range work {
				var last string
				for {
					name, err := g.ask(a, 250*time.Millisecond)
					if err == nil && ok(a, name) {
						break
					}
					last = fmt.Sprintf("%s: answered %q (%v)", a, name, err)
					if ctx.Err() != nil {
						mu.Lock()
						failed = append(failed, last)
						mu.Unlock()
						break
					}
					time.Sleep(10 * time.Millisecond) // the pace of one address's tries
				}
			}
		}()
	}
	for _, a := range addrs {
		work <- a
	}
	close(work)
	wg.Wait()
	if len(failed) > 0 {
		return fmt.Errorf("%d not answered as wanted, e.g. %s", len(failed), failed[0])
	}
	return nil
}

// lateSteps is a log handler that counts the announcers' steps logged as
// longer than a heartbeat interval, and the longest (the measure of a
// heartbeat loop kept waiting).
type lateSteps struct {
	mu      sync.Mutex
	n       int
	longest time.Duration
}

func (l *lateSteps) Enabled(context.Context, slog.Level) bool { return true }
func (l *lateSteps) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *lateSteps) WithGroup(string) slog.Handler            { return l }
func (l *lateSteps) Handle(_ context.Context, r slog.Record) error {
	if r.Message != lateMessage {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "took" {
			l.longest = max(l.longest, a.Value.Duration())
		}
		return true
	})
	return nil
}

func (l *lateSteps) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d steps longer than a heartbeat interval, the longest %s", l.n, l.longest)
}

// udpDrops is, per host, the datagrams its kernel dropped for a full
// receive buffer and the reassemblies that failed (/proc/net/snmp): a
// failed run's log says whether heartbeats were lost on the way.
func udpDrops(hosts []*netlab.Host) string {
	var out []string
	for _, h := range hosts {
		var b []byte
		err := netlab.Do(h.NS, func() (err error) { b, err = os.ReadFile("/proc/thread-self/net/snmp"); return err })
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", h.Name, err))
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s", h.Name, snmp(string(b), "Udp", "RcvbufErrors", "Ip", "ReasmFails")))
	}
	return "dropped: " + strings.Join(out, ", ")
}

// snmp picks counters out of /proc/net/snmp: pairs of (group, name).
func snmp(text string, pairs ...string) string {
	lines := strings.Split(text, "\n")
	var out []string
	for i := 0; i+1 < len(pairs); i += 2 {
		for k := 0; k+1 < len(lines); k++ {
			names, values := strings.Fields(lines[k]), strings.Fields(lines[k+1])
			if len(names) == 0 || names[0] != pairs[i]+":" || len(values) != len(names) || values[0] != names[0] {
				continue
			}
			if j := slices.Index(names, pairs[i+1]); j > 0 {
				out = append(out, pairs[i+1]+" "+values[j])
			}
			break
		}
	}
	return strings.Join(out, " ")
}
