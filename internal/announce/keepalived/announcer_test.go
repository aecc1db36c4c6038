package keepalived

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// TestAnnouncerWithKeepalived: two hosts on a segment, each running the
// real keepalived on the configuration the announcer writes: one host
// holds the address; an address added to the Want is a reload, and a
// host holds it too; the owner's health failing (a write of the health
// file, no reload) moves its address to the other host; the announcer
// stopping marks its host unhealthy.
func TestAnnouncerWithKeepalived(t *testing.T) {
	seg := netlab.NewSegment(t, "lb1", "lb2")
	dir := t.TempDir()
	want := announce.Want{Addrs: []netip.Addr{vip4}, Healthy: true}
	ann := map[string]*Announcer{}
	stops := map[string]context.CancelFunc{}
	for _, h := range seg.Hosts {
		o := Options{Config: Config{Name: h.Name, Interface: "eth0", VRID: 51, Advert: 100 * time.Millisecond,
			HealthFile: filepath.Join(dir, h.Name+".health")},
			ConfigPath: filepath.Join(dir, h.Name+".conf"), PidFile: filepath.Join(dir, h.Name+".pid")}
		a, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = a.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		ann[h.Name], stops[h.Name] = a, cancel
		a.Set(want)
		if err := netlab.Eventually(context.Background(), 5*time.Second, func() error {
			if b, err := os.ReadFile(o.HealthFile); err != nil || string(b) != "0\n" {
				return fmt.Errorf("health file %q %v", b, err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		netlab.Keepalived(t, h, o.ConfigPath, dir)
	}
	holders := func(a netip.Addr) []string { return netlab.OnEth0(seg.Hosts, a) }
	one := func(a netip.Addr, not string) string {
		t.Helper()
		var owner string
		if err := netlab.Eventually(context.Background(), 15*time.Second, func() error {
			hs := holders(a)
			if len(hs) != 1 || hs[0] == not {
				return fmt.Errorf("%s held by %v", a, hs)
			}
			owner = hs[0]
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return owner
	}
	owner := one(vip4, "")

	// a new address: the configuration written again, keepalived reloaded
	want.Addrs = append(want.Addrs, vip4b)
	for _, a := range ann {
		a.Set(want)
	}
	one(vip4b, "")

	// the owner's health fails: its addresses go to the other host
	sick := want
	sick.Healthy = false
	ann[owner].Set(sick)
	other := one(vip4, owner)
	t.Logf("%s moved from %s to %s", vip4, owner, other)

	// the other's announcer stops: its host is marked unhealthy
	stops[other]()
	if err := netlab.Eventually(context.Background(), 5*time.Second, func() error {
		if b, err := os.ReadFile(filepath.Join(dir, other+".health")); err != nil || string(b) != "1\n" {
			return fmt.Errorf("health file of %s: %q %v", other, b, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
