package tproxy

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// appliedFirst is a HAProxy driver that tells driver.Applied (the model
// runs) and then, still inside its Apply, reads the kernel's elements,
// as the pool's driver goes on to write pool.json.
type appliedFirst struct {
	k       *Driver
	told    bool // tell Applied
	v4Then  []netip.AddrPort
	applies int
}

func (a *appliedFirst) Apply(ctx context.Context, _ model.Config) (driver.Result, error) {
	a.applies++
	if a.told {
		driver.Applied(ctx)
	}
	a.v4Then, _ = elementsOf(a.k)
	return driver.Result{}, nil
}

// TestOrderedAddsAtApplied (issue 29): Ordered adds a pass's new set
// elements as soon as HAProxy's driver tells that the model runs
// (driver.Applied), not after its Apply returns; a driver that does not
// tell has them added after it returns, as before. Either way the sets
// end with the elements of the model, added once.
func TestOrderedAddsAtApplied(t *testing.T) {
	lab := netlab.New(t, 0)
	ro := render.Options{ACLDir: "/etc/haproxy/acl", Listeners: render.Listeners{Mode: render.ListenersTProxy, Port: listenPort}}
	for _, tc := range []struct {
		name     string
		told     bool
		wantThen []netip.AddrPort
	}{
		{"told", true, []netip.AddrPort{netip.AddrPortFrom(vipA, 80)}},
		{"not told", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := New(Options{NetNS: netlab.Path(lab.LB), Render: ro})
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			if _, err := k.Apply(t.Context(), model.Config{}); err != nil { // empty sets
				t.Fatal(err)
			}
			h := &appliedFirst{k: k, told: tc.told}
			fe := model.Frontend{Name: "fe_a", Service: "default/a", Backend: "be_a", Binds: []model.Bind{bind(vipA, 80)}}
			res, err := Ordered{HAProxy: h, Kernel: k}.Apply(t.Context(), model.Config{Frontends: []model.Frontend{fe}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(h.v4Then, tc.wantThen) {
				t.Errorf("inside HAProxy's Apply, after Applied: elements %v, want %v", h.v4Then, tc.wantThen)
			}
			if v4, _ := elementsOf(k); !slices.Equal(v4, []netip.AddrPort{netip.AddrPortFrom(vipA, 80)}) {
				t.Errorf("after the pass: elements %v, want the Service's", v4)
			}
			if res.Ops != 1 {
				t.Errorf("%d operations, want 1 (the element added once)", res.Ops)
			}
		})
	}
}
