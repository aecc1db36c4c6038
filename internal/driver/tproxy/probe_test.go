package tproxy

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// Probe (--listeners=auto) puts the table and the policy routing in place
// and leaves the sets' elements alone: a restarted controller's probe
// drops no Service a running table serves. Where the table's rules were
// removed behind its back, it writes them again.
func TestProbeKeepsElements(t *testing.T) {
	lab := netlab.New(t, 0)
	ro := render.Options{ACLDir: "/etc/haproxy/acl", Listeners: render.Listeners{Mode: render.ListenersTProxy, Port: listenPort}}
	opts := Options{NetNS: netlab.Path(lab.LB), Render: ro}
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	fe := model.Frontend{Name: "fe_a", Service: "default/a", Backend: "be_a", Binds: []model.Bind{bind(vipA, 80), bind(vipA6, 443)}}
	if _, err := d.Apply(t.Context(), model.Config{Frontends: []model.Frontend{fe}}); err != nil {
		t.Fatal(err)
	}
	if out, err := lab.Exec(lab.LB, "nft", "flush", "chain", "inet", Table, "prerouting"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := Probe(opts); err != nil {
		t.Fatal(err)
	}
	v4, v6 := elementsOf(d)
	if !slices.Equal(v4, []netip.AddrPort{netip.AddrPortFrom(vipA, 80)}) || !slices.Equal(v6, []netip.AddrPort{netip.AddrPortFrom(vipA6, 443)}) {
		t.Errorf("after the probe the sets hold %v %v, want the Service's two elements", v4, v6)
	}
	out, err := lab.ListTable(lab.LB, Table)
	if err != nil {
		t.Fatalf("no table after the probe: %v", err)
	}
	if n := strings.Count(out, " tproxy ip"); n != 2 {
		t.Errorf("the prerouting chain has %d tproxy rules after the probe, want 2 (one per family):\n%s", n, out)
	}
}
