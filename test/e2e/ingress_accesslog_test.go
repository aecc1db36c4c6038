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
// Ingress's do; switched to "true" they are logged. The log level's rule
// is written while some Ingress of the frontend asks for it: the first
// "false" is one reload, the second and the switch back of one of them
// none.
func TestIngressAccessLog(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	g.web("web", 0)
	quiet := ingressOf("quiet", "quiet.example.com", map[string]string{}, prefix("/", "web"))
	loud := ingressOf("loud", "loud.example.com", nil, prefix("/", "web"))
	closed := ingressOf("closed", "closed.example.com", map[string]string{
		ingress.NginxPrefix + "allowlist-source-range": "192.0.2.0/24",
	}, prefix("/", "web"))
	g.create(quiet, loud, closed)
	g.start()
	g.eventually("served", answers(g.httpPort, false, "loud.example.com", "/", 200, "web "))

	// logged is nil once HAProxy's log has a line with path.
	logged := func(path string) func() error {
		return func() error {
			if strings.Contains(g.hap.Output(), path) {
				return nil
			}
			return fmt.Errorf("no log line with %s", path)
		}
	}
	// silent is nil once a request to host (answered status) leaves no
	// log line: the loud Ingress's request goes after it, and once its
	// line is there, the line of the request before it would be too.
	n := 0
	silent := func(host string, status int) func() error {
		return func() error {
			n++
			probe, mark := fmt.Sprintf("/%s-probe-%d", strings.Split(host, ".")[0], n), fmt.Sprintf("/loud-probe-%d", n)
			if err := answers(g.httpPort, false, host, probe, status, "")(); err != nil {
				return err
			}
			if err := answers(g.httpPort, false, "loud.example.com", mark, 200, "web ")(); err != nil {
				return err
			}
			eventuallyIn(t, "the loud Ingress logged", logged(mark))
			if strings.Contains(g.hap.Output(), probe) {
				return fmt.Errorf("%s logged", probe)
			}
			return nil
		}
	}
	switchLog := func(name, v string) {
		updateIngress(t, g.ing.Ingresses(ns), name, func(o *netv1.Ingress) {
			if o.Annotations == nil { // none: the apiserver keeps no empty map
				o.Annotations = map[string]string{}
			}
			o.Annotations[ingress.NginxPrefix+"enable-access-log"] = v
		})
	}
	first := g.reloads()
	switchLog("quiet", "false")
	g.eventually("the frontend's first enable-access-log: false", silent("quiet.example.com", 200))
	if r := g.reloads(); r != first {
		t.Errorf("the frontend's first enable-access-log: false: %d reloads, want 0 (its rule is always there)", r-first)
	}
	before := g.reloads()
	switchLog("closed", "false")
	g.eventually("a second Ingress not logged, its 403s either", silent("closed.example.com", 403))
	for i := range 3 { // and no request of either logged
		if err := silent("quiet.example.com", 200)(); err != nil {
			t.Errorf("quiet, request %d: %v", i, err)
		}
		if err := silent("closed.example.com", 403)(); err != nil {
			t.Errorf("closed, request %d: %v", i, err)
		}
	}

	switchLog("quiet", "true")
	g.eventually("logged once switched on", func() error {
		if err := answers(g.httpPort, false, "quiet.example.com", "/quiet-now", 200, "web ")(); err != nil {
			return err
		}
		return logged("/quiet-now")()
	})
	if r := g.reloads(); r != before {
		t.Errorf("enable-access-log with the rule written: %d reloads, want 0", r-before)
	}
}
