package e2e

import (
	"fmt"
	"strings"
	"testing"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// TestIngressAccessLog: ingress-nginx's enable-access-log on real HAProxy:
// with "false" an Ingress's requests (answered 200, or 403 by its allow
// list) leave no line in HAProxy's per-request log while another
// Ingress's do; switched to "true" they are logged; no reload.
func TestIngressAccessLog(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	g.web("web", 0)
	quiet := ingressOf("quiet", "quiet.example.com", map[string]string{ingress.NginxPrefix + "enable-access-log": "false"},
		prefix("/", "web"))
	loud := ingressOf("loud", "loud.example.com", nil, prefix("/", "web"))
	closed := ingressOf("closed", "closed.example.com", map[string]string{
		ingress.NginxPrefix + "enable-access-log":      "false",
		ingress.NginxPrefix + "allowlist-source-range": "192.0.2.0/24",
	}, prefix("/", "web"))
	g.create(quiet, loud, closed)
	g.start()
	g.eventually("served", answers(g.httpPort, false, "loud.example.com", "/", 200, "web "))
	before := g.reloads()

	// logged is nil once HAProxy's log has a line with path.
	logged := func(path string) func() error {
		return func() error {
			if strings.Contains(g.hap.Output(), path) {
				return nil
			}
			return fmt.Errorf("no log line with %s", path)
		}
	}
	for i := range 3 {
		if err := answers(g.httpPort, false, "quiet.example.com", fmt.Sprintf("/quiet-probe-%d", i), 200, "web ")(); err != nil {
			t.Fatal(err)
		}
		if err := answers(g.httpPort, false, "closed.example.com", fmt.Sprintf("/closed-probe-%d", i), 403, "")(); err != nil {
			t.Fatal(err)
		}
	}
	// The loud Ingress's request goes last: once its line is there, the
	// lines of the requests before it would be too.
	if err := answers(g.httpPort, false, "loud.example.com", "/loud-probe", 200, "web ")(); err != nil {
		t.Fatal(err)
	}
	g.eventually("the other Ingress logged", logged("/loud-probe"))
	if out := g.hap.Output(); strings.Contains(out, "quiet-probe") || strings.Contains(out, "closed-probe") {
		t.Errorf("enable-access-log: false logged:\n%s", out)
	}

	updateIngress(t, g.ing.Ingresses(ns), "quiet", func(o *netv1.Ingress) {
		o.Annotations[ingress.NginxPrefix+"enable-access-log"] = "true"
	})
	g.eventually("logged once switched on", func() error {
		if err := answers(g.httpPort, false, "quiet.example.com", "/quiet-now", 200, "web ")(); err != nil {
			return err
		}
		return logged("/quiet-now")()
	})
	if r := g.reloads(); r != before {
		t.Errorf("enable-access-log switched: %d reloads, want 0", r-before)
	}
}
