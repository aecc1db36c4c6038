package gateway

import (
	"net/netip"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestTableMemoRouteTwiceIsWhole: a listener where a route has two
// places in the new table (a parentRef with the listener's section and
// one without) is not updated from the last table but built whole
// (tablestamps.go, seenTwice), and every table is the whole compile's.
// A route object's places on a listener change in number only with the
// Gateway (a listener renamed leaves the parentRef naming its section
// without it): a new Gateway makes every fragment new, so that table is
// whole too, with no refusal of the last table's places (markOld).
func TestTableMemoRouteTwiceIsWhole(t *testing.T) {
	w := newTableWorld(5, 100, 0)
	memo := &Memo{}
	withMemo := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}, Memo: memo}
	whole := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}}
	Compute(w.input(), withMemo)
	for _, c := range []struct {
		name string
		edit func()
	}{
		{"a route now on the listener twice (the new table)", func() {
			r := w.routes["r7"].DeepCopy()
			r.Spec.ParentRefs = append(r.Spec.ParentRefs, parent("gw", "web"))
			w.routes["r7"] = r
		}},
		{"another route changed, the route still twice", func() { w.route(40) }},
		{"the listener renamed: the route once on it, twice in the last table", func() {
			g := w.gws[0].DeepCopy()
			g.Spec.Listeners[0].Name = "web2" // the same port and hostname: the last table is kept
			w.gws = []*gwv1.Gateway{g}
		}},
	} {
		c.edit()
		before := memo.TablesWhole
		in := w.input()
		if d := firstDiff(Compute(in, withMemo), Compute(in, whole)); d != "" {
			t.Fatalf("%s: the kept table differs from the whole one: %s", c.name, d)
		}
		if memo.TablesWhole == before {
			t.Errorf("%s: the table was updated from the last one: want it built whole", c.name)
		}
	}
}

// TestReslotKeepsRoom: a listener's slots are made with room for a few
// more routes, so a new route each pass reuses the spare slots of the
// pass before the last instead of making them again.
func TestReslotKeepsRoom(t *testing.T) {
	first := reslot(nil, 0, 5000)
	spare := [][]tableSlot{first[:5000]}
	for _, n := range []int{5000, 5001, 5002} {
		if got := reslot(spare, 0, n); cap(got) != cap(first) || len(got) != 0 || &got[:1][0] != &first[:1][0] {
			t.Errorf("%d slots: a new slice (cap %d), want the spare one (cap %d)", n, cap(got), cap(first))
		}
	}
}
