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
	if _, err := Probe(opts); err != nil {
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

// Probe's undo removes what the probe added and nothing an earlier
// controller left: run failing after its probe leaves the namespace as
// it found it.
func TestProbeUndo(t *testing.T) {
	ro := render.Options{ACLDir: "/etc/haproxy/acl", Listeners: render.Listeners{Mode: render.ListenersTProxy, Port: listenPort}}
	for _, tc := range []struct {
		name         string
		before       []string // what the namespace holds before the probe: "table", "routing"
		table, rules bool     // after undo
	}{
		{"nothing before", nil, false, false},
		{"a running controller's", []string{"table", "routing"}, true, true},
		{"only the table", []string{"table"}, true, false},
		{"only the policy routing", []string{"routing"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lab := netlab.New(t, 0)
			opts := Options{NetNS: netlab.Path(lab.LB), Render: ro}
			if len(tc.before) > 0 {
				d, err := New(opts)
				if err != nil {
					t.Fatal(err)
				}
				err = d.Setup()
				d.Close()
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(tc.before, "table") {
					if out, err := lab.Exec(lab.LB, "nft", "delete", "table", "inet", Table); err != nil {
						t.Fatalf("%v: %s", err, out)
					}
				}
				if !slices.Contains(tc.before, "routing") {
					opts := opts
					opts.defaults()
					if err := remove(opts, false, true); err != nil {
						t.Fatal(err)
					}
				}
			}
			undo, err := Probe(opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := lab.ListTable(lab.LB, Table); err != nil {
				t.Fatalf("no table after the probe: %v", err)
			}
			if err := undo(); err != nil {
				t.Fatal(err)
			}
			_, terr := lab.ListTable(lab.LB, Table)
			rules, err := lab.Exec(lab.LB, "ip", "rule", "show")
			if err != nil {
				t.Fatal(err)
			}
			if (terr == nil) != tc.table || strings.Contains(rules, "fwmark") != tc.rules {
				t.Errorf("after undo: table %v, policy routing rule %v; want %v, %v:\n%s", terr == nil, strings.Contains(rules, "fwmark"), tc.table, tc.rules, rules)
			}
		})
	}
}
