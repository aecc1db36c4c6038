package tproxy

import (
	"context"
	"maps"
	"path/filepath"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// claimsSeen is a HAProxy driver that keeps the models it was handed.
type claimsSeen struct{ got []model.Config }

func (c *claimsSeen) Apply(_ context.Context, cfg model.Config) (driver.Result, error) {
	c.got = append(c.got, cfg)
	return driver.Result{}, nil
}

// TestOrderedClaimsOnce: Ordered hands HAProxy's driver a model carrying
// the fixed HTTPS listener's claims, made once with the names held
// (model.Config.HTTPSClaimed): the Gateway that held a name keeps the
// listener against a newcomer whose certificate names it too, whatever
// their names' order; the pool's view of the model keeps the claims,
// and the kernel's HTTPS set holds the holder's address alone. Without
// the claims carried, each of the pass's consumers (about ten) claims
// the names again.
func TestOrderedClaimsOnce(t *testing.T) {
	lab := netlab.New(t, 0)
	dir := t.TempDir()
	ro := render.Options{ACLDir: filepath.Join(dir, "acl"), CertDir: filepath.Join(dir, "certs"),
		Listeners: render.Listeners{Mode: render.ListenersTProxy, Port: listenPort, HTTP: true}}
	k, err := New(Options{NetNS: netlab.Path(lab.LB), Render: ro})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	root := testcert.CA(t, "claims")
	b := httpsGateway(t, "gw_b", []model.Bind{bind(vipB, 443)}, "shop.example.com", "be_b", root)
	a := httpsGateway(t, "gw_a", []model.Bind{bind(vipA, 443)}, "shop.example.com", "be_a", root)
	h := &claimsSeen{}
	o := Ordered{HAProxy: h, Kernel: k, Holds: render.NewHTTPSHolds(render.RunningHTTPS{})}
	if _, err := o.Apply(t.Context(), model.Config{Frontends: []model.Frontend{b}}); err != nil {
		t.Fatal(err)
	}
	cfg := model.Config{Frontends: []model.Frontend{a, b}} // a first, by name
	if _, err := o.Apply(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	got := h.got[len(h.got)-1]
	if got.HTTPSClaimed == nil {
		t.Fatal("HAProxy's driver was handed no claims")
	}
	if want := map[string]bool{"gw_b": true}; !maps.Equal(got.HTTPSClaimed.Names, want) {
		t.Errorf("claims %v, want %v (the holder's)", got.HTTPSClaimed.Names, want)
	}
	if fresh := ro.HTTPSListened(cfg); !maps.Equal(fresh, map[string]bool{"gw_a": true}) {
		t.Errorf("claimed without the held names: %v, want name order's", fresh)
	}
	if v := spares.ViewExcept(spares.State{}, got, nil); v.HTTPSClaimed != got.HTTPSClaimed {
		t.Errorf("the pool's view dropped the claims")
	}
	s4, _ := HTTPSElements(got, ro)
	if len(s4) != 1 || s4[0].Addr() != vipB {
		t.Errorf("HTTPS set %v, want the holder's address %s alone", s4, vipB)
	}
}
