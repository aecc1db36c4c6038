package gateway

import (
	"net/netip"
	"slices"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestTableShapeKept: a table built from the last one carries its shape
// (tableshape.go), the header sets the very list of the last table while
// no set comes or goes, a new one when a route brings a set or takes the
// last rule of one away; each as model.ShapeOf gives it.
func TestTableShapeKept(t *testing.T) {
	in := manyRoutes(200, 2) // every rule matches on x-env
	memo := &Memo{}
	opts := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}, Memo: memo}
	table := func(res Result) *model.HTTP {
		t.Helper()
		h := res.Config.Frontends[0].HTTP
		if h.KeptShape() == nil {
			t.Fatal("the memo's table carries no shape")
		}
		if s := model.ShapeOf(h); !h.KeptShape().Equal(s) {
			t.Fatalf("kept shape %+v, the table's %+v", *h.KeptShape(), s)
		}
		return h
	}
	first := table(Compute(in, opts))
	in.HTTPRoutes[7] = benchRoute(7, 2, "/other") // the same header set
	second := table(Compute(in, opts))
	if memo.TablesIncremental+memo.TablesSpliced == 0 {
		t.Fatal("no table built from the last one")
	}
	if &second.KeptShape().HeaderSets[0] != &first.KeptShape().HeaderSets[0] {
		t.Error("no header set came or went, but the list was made again")
	}
	r := benchRoute(9, 2, "/p")
	r.Spec.Rules[0].Matches[0].Headers = append(r.Spec.Rules[0].Matches[0].Headers, gwv1.HTTPHeaderMatch{Name: "x-zone", Value: "a"})
	in.HTTPRoutes[9] = r
	third := table(Compute(in, opts))
	if want := [][]string{{}, {"x-env"}, {"x-env", "x-zone"}}; !slices.EqualFunc(third.KeptShape().HeaderSets, want, slices.Equal) {
		t.Errorf("header sets %v, want %v", third.KeptShape().HeaderSets, want)
	}
	in.HTTPRoutes[9] = benchRoute(9, 2, "/p") // the set's only rule gone
	if got := table(Compute(in, opts)).KeptShape().HeaderSets; len(got) != 2 {
		t.Errorf("header sets %v after the only rule of x-env,x-zone went: want [[] [x-env]]", got)
	}
}
