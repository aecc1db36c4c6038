package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// passes counts the controller's passes so far (its "update" lines: the
// test controllers log at debug, so every pass has one).
func (e *env) passes() int { return strings.Count(e.ctlLog.String(), "msg=update") }

// settledPasses waits until no pass has started for quiet (at most
// converge) and returns the passes so far.
func (e *env) settledPasses(quiet time.Duration) int { return idlePasses(e.passes, quiet, converge) }

// TestGatewayStatusWritesCostNoPass: one HTTPRoute changed among several
// is one pass of the controller: the route's status it then writes comes
// back through the informer and changes nothing a pass reads (before,
// every change was two passes or more, each over every route). A status
// of ours removed by another writer is written again, still without a
// pass (the publisher compares on its own).
func TestGatewayStatusWritesCostNoPass(t *testing.T) {
	if !inNetns(t, podAddrs...) {
		return
	}
	g := newHTTPGatewayEnv(t)
	g.httpPod("web-a", 1, 8080)
	g.httpPod("web-b", 2, 8080)
	port := haproxytest.FreePort(t)
	g.createGateway("gw", listener("http", gwv1.HTTPProtocolType, port, ""))
	const routes = 8
	for i := range routes {
		g.httpRoute(fmt.Sprintf("r%d", i), "http", fmt.Sprintf("r%d.example.com", i), backendRef("web-a", 1))
	}
	// web-b's backend exists from the start: a route moved to it is map
	// data, no reload (a reload put off is a pass of its own).
	g.httpRoute("seed-b", "http", "seed-b.example.com", backendRef("web-b", 1))
	// No periodic pass during the test: each one counted is a change's.
	g.startController("--mode=gateway", "--resync-period", "1h")
	for i := range routes {
		g.eventually(fmt.Sprintf("route r%d accepted", i), g.routeAccepted(gateway.KindHTTPRoute, fmt.Sprintf("r%d", i)))
	}
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	answer := func(host, want string) func() error {
		return func() error {
			code, body, err := httpAnswerAt(c, serviceIP(), port, host)
			if err != nil || code != http.StatusOK || body != want {
				return fmt.Errorf("%s: answer %d %q, error %v; want 200 from %s", host, code, body, err, want)
			}
			return nil
		}
	}
	g.eventually("r3 served by web-a", answer("r3.example.com", "web-a"))
	before := g.settledPasses(time.Second)

	g.setHTTPBackendRefs("r3", backendRef("web-b", 1))
	g.eventually("r3 served by web-b", answer("r3.example.com", "web-b"))
	g.eventually("r3's new generation accepted", g.routeAccepted(gateway.KindHTTPRoute, "r3"))
	if n := g.settledPasses(time.Second) - before; n != 1 {
		t.Fatalf("one route changed took %d passes, want 1 (its status write must cost none); log:\n%s", n, g.ctlLog.String())
	}

	// Another writer replaces our parent status by its own: the
	// publisher writes ours again, and that costs no pass either.
	before = g.passes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rt, err := g.gw.GatewayV1().HTTPRoutes(ns).Get(bg, "r5", metav1.GetOptions{})
		if err != nil {
			return err
		}
		rt.Status.Parents = []gwv1.RouteParentStatus{{ParentRef: gwv1.ParentReference{Name: "theirs"}, ControllerName: "example.com/other",
			Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.Now()}}}}
		_, err = g.gw.GatewayV1().HTTPRoutes(ns).UpdateStatus(bg, rt, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	g.eventually("r5's status written again", g.routeAccepted(gateway.KindHTTPRoute, "r5"))
	if n := g.settledPasses(time.Second) - before; n != 0 {
		t.Fatalf("a status overwritten by another writer took %d passes, want 0", n)
	}
}
