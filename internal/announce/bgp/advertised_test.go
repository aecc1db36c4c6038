package bgp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// heldRecorder keeps what the announcer told its metrics (Held).
type heldRecorder struct {
	mu   sync.Mutex
	held []string
	n    int
}

func (r *heldRecorder) Addresses(n int) { r.mu.Lock(); r.n = n; r.mu.Unlock() }
func (r *heldRecorder) Sessions(int)    {}
func (r *heldRecorder) Held(addrs []netip.Addr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = r.held[:0]
	for _, a := range addrs {
		r.held = append(r.held, a.String())
	}
}

// writeAdvertised is the speaker child's report for the test: what it
// advertises to which router, written whole every 50 ms until ctx ends,
// and beside it (file.metrics) the addresses its metrics were told.
func writeAdvertised(ctx context.Context, a *Announcer, rec *heldRecorder, file string) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		adv := a.Advertised(ctx)
		out := map[string][]string{}
		for ad, routers := range adv {
			out[ad.String()] = routers
		}
		if b, err := json.Marshal(out); err == nil {
			_ = atomicfile.Write(file, b, 0o600)
		}
		rec.mu.Lock()
		m := map[string]any{"held": slices.Clone(rec.held), "addresses": rec.n}
		rec.mu.Unlock()
		if b, err := json.Marshal(m); err == nil {
			_ = atomicfile.Write(file+".metrics", b, 0o600)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// TestAdvertisedOnlyWhileEstablished: what a speaker says it advertises
// (Advertised, and so its Holders, which the Announced condition is
// written from, and its metrics) is only what a router holds a session
// for: against BIRD,
// the address with the router once the session is up; nothing while
// BIRD has the session disabled (the speaker still has the route in its
// own table); the address again once it is enabled; nothing when the
// health gate fails.
func TestAdvertisedOnlyWhileEstablished(t *testing.T) {
	l := newLab(t, 1, birdOpts{})
	lb1 := l.lbs[0]
	file := filepath.Join(l.dir, "lb1.advertised")
	w := announce.Want{Addrs: []netip.Addr{vip4}, Healthy: true}
	l.start(lb1, speakerFile{Config: Config{RestartTime: 30 * time.Second}, AdvertisedFile: file}, w)
	router := l.routerAddr().String()
	// advertisedIs polls the child's report until it is want ({} for
	// nothing) and, when the router should hold the route, the router too
	advertisedIs := func(want map[string][]string, timeout time.Duration) {
		t.Helper()
		var last map[string][]string
		if err := netlab.Eventually(context.Background(), timeout, func() error {
			b, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			last = nil
			if err := json.Unmarshal(b, &last); err != nil {
				return err
			}
			if len(last) != len(want) {
				return fmt.Errorf("advertised %v, want %v", last, want)
			}
			for a, rs := range want {
				if !slices.Equal(last[a], rs) {
					return fmt.Errorf("advertised %v, want %v", last, want)
				}
			}
			// the metrics say the same (within recordEvery)
			b, err = os.ReadFile(file + ".metrics")
			if err != nil {
				return err
			}
			var m struct {
				Held      []string
				Addresses int
			}
			if err := json.Unmarshal(b, &m); err != nil {
				return err
			}
			if len(m.Held) != len(want) || m.Addresses != len(want) {
				return fmt.Errorf("metrics: %d addresses, held %v; advertised %v", m.Addresses, m.Held, want)
			}
			for _, a := range m.Held {
				if _, ok := want[a]; !ok {
					return fmt.Errorf("metrics: held %v; advertised %v", m.Held, want)
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.waitRoutes(vip4, up, lb1); err != nil {
		t.Fatal(err)
	}
	advertisedIs(map[string][]string{vip4.String(): {router}}, 5*time.Second)

	// the router takes the session down (a Cease): nothing reaches a
	// router, whatever the speaker's own table holds
	if _, err := l.birdc("disable", "lb1"); err != nil {
		t.Fatal(err)
	}
	advertisedIs(map[string][]string{}, 5*time.Second)
	if err := l.waitRoutes(vip4, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := l.birdc("enable", "lb1"); err != nil {
		t.Fatal(err)
	}
	if err := l.waitRoutes(vip4, up, lb1); err != nil {
		t.Fatal(err)
	}
	advertisedIs(map[string][]string{vip4.String(): {router}}, 5*time.Second)

	// the health gate fails: withdrawn, so advertised to nobody
	w.Healthy = false
	l.set(lb1, w)
	advertisedIs(map[string][]string{}, 5*time.Second)
}
