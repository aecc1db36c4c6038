package layer2

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// TestHoldersAgree: every host of the group reports the same owner of
// each address, the host that holds it; once the owner is frozen, the
// two others agree within a second on the new one, the host of theirs
// that now holds it (the frozen one, cut off, keeps it on its side) (what `status`, the metrics and the "address moved" log line
// read).
func TestHoldersAgree(t *testing.T) {
	g := newGroup(t, Config{})
	owner, err := g.steady(vip4, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	agree := func(hosts []string, not string) (string, error) {
		var got string
		err := netlab.Eventually(context.Background(), time.Second, func() error {
			// the frozen host, cut off, holds on to it on its side
			truth := slices.DeleteFunc(g.holders(vip4), func(h string) bool { return h == not })
			if len(truth) != 1 {
				return fmt.Errorf("%s held by %v", vip4, truth)
			}
			for _, h := range hosts {
				if v := g.view(h)[vip4]; !slices.Equal(v, truth) {
					return fmt.Errorf("%s says %s is held by %v, it is by %v", h, vip4, v, truth)
				}
			}
			got = truth[0]
			return nil
		})
		return got, err
	}
	all := []string{"lb1", "lb2", "lb3"}
	if _, err := agree(all, ""); err != nil {
		t.Fatal(err)
	}
	if err := g.seg.Freeze(g.host(owner), true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.seg.Freeze(g.host(owner), false) })
	others := slices.DeleteFunc(slices.Clone(all), func(h string) bool { return h == owner })
	next, err := agree(others, owner)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s moved from %s to %s; both others agree", vip4, owner, next)
}
