package e2e

import (
	"fmt"
	"net/http"
	"testing"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// TestIngressConnectionProxyHeader: ingress-nginx's connection-proxy-header
// on real HAProxy: `close` reaches the Pod as `Connection: close` (the
// server connection is not kept for another request), `keep-alive` is
// HAProxy's own HTTP/1.1 default (no close), and a value HAProxy does not
// send (`upgrade`) refuses the Ingress with an Event while its last good
// version serves. The header's rules are written while some Ingress of
// the frontend sets it: the first `close` is one reload; with another
// Ingress keeping them, none of the changes reloads.
func TestIngressConnectionProxyHeader(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	g.serve("conn", 0, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "conn close=%t connection=%s", r.Close, r.Header.Get("Connection"))
	})
	const host = "conn.example.com"
	g.create(ingressOf("conn", host, map[string]string{}, prefix("/", "conn")))
	g.start()
	g.eventually("served without the annotation", answers(g.httpPort, false, host, "/", 200, "conn close=false connection="))

	set := func(v string) {
		updateIngress(t, g.ing.Ingresses(ns), "conn", func(o *netv1.Ingress) {
			if o.Annotations == nil { // none: the apiserver keeps no empty map
				o.Annotations = map[string]string{}
			}
			o.Annotations[ingress.NginxPrefix+"connection-proxy-header"] = v
		})
	}
	first := g.reloads()
	set("close")
	g.eventually("the frontend's first close sent to the Pod", answers(g.httpPort, false, host, "/", 200, "conn close=true connection=close"))
	if r := g.reloads(); r != first {
		t.Errorf("the frontend's first connection-proxy-header: %d reloads, want 0 (its rules are always there)", r-first)
	}
	// Another Ingress of the frontend keeps the rules.
	const other = "conn2.example.com"
	g.create(ingressOf("conn2", other, map[string]string{ingress.NginxPrefix + "connection-proxy-header": "close"}, prefix("/", "conn")))
	g.eventually("the other Ingress", answers(g.httpPort, false, other, "/", 200, "conn close=true connection=close"))

	before := g.reloads()
	set("Keep-Alive")
	g.eventually("keep-alive: no close", answers(g.httpPort, false, host, "/", 200, "conn close=false connection="))
	set("close")
	g.eventually("close again", answers(g.httpPort, false, host, "/", 200, "conn close=true connection=close"))
	set("upgrade")
	g.eventually("an Event refuses the value", g.ingressEvent("conn", "Refused", "connection-proxy-header"))
	if err := answers(g.httpPort, false, host, "/", 200, "conn close=true connection=close")(); err != nil {
		t.Errorf("the last good version: %v", err)
	}
	if r := g.reloads(); r != before {
		t.Errorf("connection-proxy-header changes reloaded HAProxy %d times, want 0", r-before)
	}
}
