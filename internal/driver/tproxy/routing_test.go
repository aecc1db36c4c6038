package tproxy

import (
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// The policy routing is the controller's own: created once however often
// the driver starts, and removed, with the table, by Cleanup; rules of
// others are left alone.
func TestPolicyRouting(t *testing.T) {
	lab := netlab.New(t, 0)
	ipn(t, lab.LB, "rule", "add", "fwmark", "0x1", "lookup", "100", "priority", "100") // another's
	count := func() (rules, routes int) {
		t.Helper()
		h, err := netns.GetFromName(lab.LB)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		nl, err := netlink.NewHandleAt(h, unix.NETLINK_ROUTE)
		if err != nil {
			t.Fatal(err)
		}
		defer nl.Close()
		for _, fam := range []int{unix.AF_INET, unix.AF_INET6} {
			rs, err := nl.RuleList(fam)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				if r.Table == DefaultRouteTable && r.Mark == DefaultMark {
					rules++
				}
			}
			rts, err := nl.RouteListFiltered(fam, &netlink.Route{Table: DefaultRouteTable}, netlink.RT_FILTER_TABLE)
			if err != nil {
				t.Fatal(err)
			}
			routes += len(rts)
		}
		return rules, routes
	}
	for range 2 {
		d, err := New(Options{NetNS: netlab.Path(lab.LB)})
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
	}
	if rules, routes := count(); rules != 2 || routes != 2 {
		t.Errorf("after two starts: %d rules, %d routes; want one of each per family", rules, routes)
	}
	if err := Cleanup(netlab.Path(lab.LB), Options{}); err != nil {
		t.Fatal(err)
	}
	if rules, routes := count(); rules != 0 || routes != 0 {
		t.Errorf("after Cleanup: %d rules, %d routes; want none", rules, routes)
	}
	if out, err := lab.Exec(lab.LB, "ip", "rule", "show"); err != nil || !strings.Contains(out, "lookup 100") {
		t.Errorf("Cleanup touched another's rule (%v):\n%s", err, out)
	}
	if err := Cleanup(netlab.Path(lab.LB), Options{}); err != nil {
		t.Errorf("Cleanup with nothing left: %v", err)
	}
}
