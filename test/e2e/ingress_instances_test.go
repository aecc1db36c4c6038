package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// Ingresses on several --instance (local HAProxy): each instance's
// Ingress frontend holds every served Ingress's host, and an Ingress's
// status lists the address only once every instance runs the model that
// serves it: an instance down holds up the status, never the others'
// traffic.
func TestIngressInstances(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	dirB := t.TempDir()
	hapB := haproxytest.Start(t, dirB, initHAProxy(t, dirB))
	g.web("web", 0)
	g.create(ingressOf("shop", "shop.example.com", nil, prefix("/", "web")))
	g.start("--instance", localInstance("a", g.dir, g.hap), "--instance", localInstance("b", dirB, hapB))
	// --instance has no tproxy mode: the controller serves its
	// --bind-address, 127.0.0.1, in every suite mode.
	addr := g.listen.boundIP([]string{"--instance"})
	hosts := func(dir string) string {
		return render.HTTPMapFile(filepath.Join(dir, "acl"), ingress.HTTPFrontend, render.HTTPHosts)
	}
	g.eventually("a holds shop", mapHas(g.hap.StatsSocket, hosts(g.dir), "shop.example.com"))
	g.eventually("b holds shop", mapHas(hapB.StatsSocket, hosts(dirB), "shop.example.com"))
	g.eventually("shop's status once both run it", ingressStatus(g, "shop", addr))

	hapB.Kill(t)
	g.create(ingressOf("blog", "blog.example.com", nil, prefix("/", "web")))
	g.eventually("a holds blog while b is down", mapHas(g.hap.StatsSocket, hosts(g.dir), "blog.example.com"))
	if err := ingressStatus(g, "blog", addr)(); err == nil {
		t.Errorf("blog's status written while instance b is down")
	}
	hapB.Restart(t)
	g.eventually("b holds blog", mapHas(hapB.StatsSocket, hosts(dirB), "blog.example.com"))
	g.eventually("blog's status once both run it", ingressStatus(g, "blog", addr))
}

// mapHas is nil once the map file of the HAProxy behind socket has key.
func mapHas(socket, file, key string) func() error {
	return func() error {
		rt := haproxy.NewRuntime(socket)
		defer rt.Close()
		out, err := rt.Exec(bg, []string{"show map " + file})
		if err != nil {
			return err
		}
		for _, l := range strings.Split(out[0], "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[1] == key {
				return nil
			}
		}
		return fmt.Errorf("%s: no %s in %q", file, key, out[0])
	}
}
