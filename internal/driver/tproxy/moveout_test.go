package tproxy

import (
	"context"
	"crypto/x509"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// TestHTTPSMoveOutServedWhileReloadWaits: a Gateway behind the fixed
// HTTPS listener that can no longer share it (its ALPN now http/1.1
// alone: a frontend of its own, a reload) is served through the
// listener for as long as the reload gate holds that reload back: its
// set element stays until its own bind runs (Ordered deletes it after
// HAProxy applied), and its line stays in the running listener's
// crt-list. Before, the element went at the pass's start and the line
// with the held reload's certificate push: the Gateway was refused
// until the reload. The reload (a restarted controller's first pass)
// then serves it from its own frontend (http/1.1 agreed where the
// listener offers h2) and its element is gone.
func TestHTTPSMoveOutServedWhileReloadWaits(t *testing.T) {
	l := startDPOpts(t, render.ListenersTProxy, spares.Policy{}, true)
	// The Gateway's addresses are the load balancer's own, as an own
	// frontend's are in tproxy mode (docs/listeners.md); TPROXY takes them
	// all the same while the set has them.
	ipn(t, l.lab.LB, "addr", "add", vipA.String()+"/32", "dev", "lo")
	ipn(t, l.lab.LB, "addr", "add", vipA6.String()+"/128", "dev", "lo", "nodad")
	hopts := l.hopts
	hopts.ReloadSettle = time.Hour // every reload after the first is held back
	l.restart(t, hopts)            // servefirst_test.go
	root := testcert.CA(t, "root")
	roots := x509.NewCertPool()
	roots.AddCert(root.Cert)
	be := &model.Backend{Name: "gwh_a", Balance: "roundrobin", HTTP: true,
		Servers: []model.Server{{Addr: netip.MustParseAddr("127.0.0.1"), Port: httpAnswering(t, l.lab.LB, "a")}}}
	one := httpsGateway(t, "gw_default_one_443", []model.Bind{bind(vipA, 443), bind(vipA6, 443)}, "a.example.com", "gwh_a", root)
	cfg := model.Config{Frontends: []model.Frontend{one}, Backends: []*model.Backend{be, {Name: model.RejectBackend, Balance: "roundrobin"}}}
	l.apply(t, cfg)
	ap := netip.AddrPortFrom
	served := func(step string, dsts ...netip.AddrPort) []string {
		t.Helper()
		var alpns []string
		for _, dst := range dsts {
			var a testcert.Answer
			err := netlab.Eventually(t.Context(), 5*time.Second, func() error {
				var err error
				a, err = askHTTPS(l.lab.Client, dst, "a.example.com", "a.example.com", roots, "h2", "http/1.1")
				if err == nil && a.ALPN != "h2" && (a.Body != "a" || !strings.Contains(a.Status, " 200 ")) {
					err = errors.New(a.Status + " " + a.Body)
				}
				return err
			})
			if err != nil {
				t.Fatalf("%s: %v: %v", step, dst, err)
			}
			alpns = append(alpns, a.ALPN)
		}
		return alpns
	}
	if got := served("behind the listener", ap(vipA, 443), ap(vipA6, 443)); got[0] != "h2" {
		t.Fatalf("behind the listener: ALPN %q, want h2", got[0])
	}
	before := l.reloads(t)

	moved := one
	tlsCopy := *one.TLS
	tlsCopy.ALPN = []string{"http/1.1"}
	moved.TLS = &tlsCopy
	next := cfg
	next.Frontends = []model.Frontend{moved}
	if l.ropts.HTTPSListened(next)[moved.Name] {
		t.Fatal("the Gateway with ALPN http/1.1 alone is still listened: the test moves nothing")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := l.drv.Apply(ctx, next); !errors.Is(err, driver.ErrDeferred) {
		t.Fatalf("moving out: %v, want the reload held back", err)
	}
	if after := l.reloads(t); after != before {
		t.Fatalf("the reload gate let %d reloads through", after-before)
	}
	// Still the listener's (h2 offered), and served, both families.
	for i := range 3 {
		if got := served("while the reload waits", ap(vipA, 443), ap(vipA6, 443)); got[0] != "h2" || got[1] != "h2" {
			t.Errorf("while the reload waits (%d): ALPN %q, want the listener's h2", i, got)
		}
	}

	hopts.ReloadSettle = 0
	l.restart(t, hopts)
	l.apply(t, next)
	if got := served("own frontend", ap(vipA, 443), ap(vipA6, 443)); got[0] != "http/1.1" || got[1] != "http/1.1" {
		t.Errorf("after the reload: ALPN %q, want its own frontend's http/1.1", got)
	}
	if s4, s6 := HTTPSElements(next, l.ropts); len(s4)+len(s6) != 0 {
		t.Errorf("HTTPS elements wanted after the move: %v %v, want none", s4, s6)
	}
	l.drv.Kernel.mu.Lock()
	left := len(l.drv.Kernel.appliedHTTPS)
	l.drv.Kernel.mu.Unlock()
	if left != 0 {
		t.Errorf("the HTTPS sets hold %d elements after the move, want 0", left)
	}
}
