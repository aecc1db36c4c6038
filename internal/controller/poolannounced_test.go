package controller

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/poolcrd"
)

func TestPoolAnnounced(t *testing.T) {
	web := []pools.Range{{First: netip.MustParseAddr("192.0.2.0"), Last: netip.MustParseAddr("192.0.2.15")}, {First: netip.MustParseAddr("2001:db8::"), Last: netip.MustParseAddr("2001:db8::f")}}
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	many := announce.Holders{}
	for i := range 100 {
		many[netip.AddrFrom4([4]byte{198, 18, 0, byte(i)})] = []string{"lb1"}
	}
	manyHosts := make([]string, 20)
	for i := range manyHosts {
		manyHosts[i] = fmt.Sprintf("lb%02d", 19-i)
	}
	for _, tc := range []struct {
		name    string
		ranges  []pools.Range
		holders announce.Holders
		n       int64
		by      []pools.AddressHolders
	}{
		{"nothing announced", web, announce.Holders{}, 0, []pools.AddressHolders{}},
		{"the pool's only, by address, hosts sorted", web, announce.Holders{
			a("2001:db8::1"): {"lb2"}, a("192.0.2.10"): {"lb3", "lb1"}, a("192.0.2.16"): {"lb1"}, a("198.51.100.1"): {"lb1"}, a("192.0.2.1"): {},
		}, 2, []pools.AddressHolders{{Address: "192.0.2.10", Hosts: []string{"lb1", "lb3"}}, {Address: "2001:db8::1", Hosts: []string{"lb2"}}}},
		{"bounded: all counted, the first 64 listed", []pools.Range{{First: a("198.18.0.0"), Last: a("198.18.0.255")}}, many, 100, nil},
		{"bounded hosts", web, announce.Holders{a("192.0.2.3"): manyHosts}, 1, []pools.AddressHolders{{Address: "192.0.2.3", Hosts: func() []string {
			hs := slices.Clone(manyHosts)
			slices.Sort(hs)
			return hs[:pools.MaxHostsPerAddress]
		}()}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, by := poolAnnounced(tc.ranges, tc.holders)
			if n != tc.n {
				t.Fatalf("announced %d, want %d", n, tc.n)
			}
			if tc.by == nil { // the bounded case
				if len(by) != pools.MaxAnnouncedBy || by[0].Address != "198.18.0.0" || by[63].Address != "198.18.0.63" {
					t.Fatalf("%d listed (%v...), want the first %d by address", len(by), by[:min(2, len(by))], pools.MaxAnnouncedBy)
				}
				return
			}
			if !slices.EqualFunc(by, tc.by, func(x, y pools.AddressHolders) bool { return x.Address == y.Address && slices.Equal(x.Hosts, y.Hosts) }) {
				t.Fatalf("%v, want %v", by, tc.by)
			}
		})
	}
}

// TestPoolStatusWritesAnnouncedBy, against a real apiserver with the
// shipped CRD: the AddressPool's status says who announces its
// addresses and how many, follows a move (a poke), and drops both when
// the announcer no longer says (nil holders); the counts stay.
func TestPoolStatusWritesAnnouncedBy(t *testing.T) {
	if os.Getenv("HKS_TESTBIN_DIR") == "" {
		t.Skip("HKS_TESTBIN_DIR not set (hack/testbin.sh)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dyn, err := dynamic.NewForConfig(kubeapi.Start(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := poolcrd.Install(ctx, dyn, poolcrd.File("../..")); err != nil {
		t.Fatal(err)
	}
	if err := poolcrd.Create(ctx, dyn, "web", map[string]any{"addresses": []any{"192.0.2.0/28"}}); err != nil {
		t.Fatal(err)
	}
	vip, other := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("198.51.100.1")
	var mu sync.Mutex
	holders := announce.Holders{vip: {"lb1"}, other: {"lb2"}}
	ps := NewPoolStatus(dyn, slog.New(slog.DiscardHandler))
	ps.WithHolders(func(context.Context) announce.Holders { mu.Lock(); defer mu.Unlock(); return holders })
	go ps.Run(ctx)
	ps.Set(map[string]pools.Counts{"web": {Assigned: 1, Free: 15}}, nil, map[string][]pools.Range{"web": {{First: netip.MustParseAddr("192.0.2.0"), Last: netip.MustParseAddr("192.0.2.15")}}})
	expect := func(want string) {
		t.Helper()
		var last string
		if err := netlab.Eventually(ctx, 10*time.Second, func() error {
			u, err := dyn.Resource(pools.GVR).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			st, _ := u.Object["status"].(map[string]any)
			last = fmt.Sprintf("assigned=%v free=%v announced=%v announcedBy=%v", st["assigned"], st["free"], st["announced"], st["announcedBy"])
			if last != want {
				return fmt.Errorf("status %s, want %s", last, want)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	expect("assigned=1 free=15 announced=1 announcedBy=[map[address:192.0.2.10 hosts:[lb1]]]")
	set := func(h announce.Holders) { mu.Lock(); holders = h; mu.Unlock(); ps.Poke() }
	set(announce.Holders{vip: {"lb3"}})
	expect("assigned=1 free=15 announced=1 announcedBy=[map[address:192.0.2.10 hosts:[lb3]]]")
	set(announce.Holders{})
	expect("assigned=1 free=15 announced=0 announcedBy=[]")
	set(nil)
	expect("assigned=1 free=15 announced=<nil> announcedBy=<nil>")
}
