package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/apiserverlb"
)

// Three apiservers behind HAProxy, driven by the controller running with
// exactly the shipped RBAC and reaching the API through HAProxy itself.
// Kill one: no client request fails, HAProxy marks it down, and the
// controller removes it once its lease leaves the EndpointSlice. Start
// another: it joins with no reload.
func TestAPIServerFailover(t *testing.T) {
	if !inNetns(t, append(slices.Clone(memberAddrs), lbAddr)...) {
		return
	}
	a := newAPILB(t)
	for _, m := range memberAddrs[:3] {
		a.member(m)
	}
	client, err := kubernetes.NewForConfig(a.cluster.Config(a.cluster.URL(memberAddrs[0])))
	if err != nil {
		t.Fatal(err)
	}
	a.client = client
	token := (&env{t: t, client: client, dir: a.dir}).rbacTokenFileFrom("../../deploy/apiserver/rbac.yaml")
	// The shipped DaemonSet is one the apiserver accepts (server-side dry run).
	raw, err := os.ReadFile("../../deploy/apiserver/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	mustYAML(t, string(raw), &ds)
	if _, err := client.AppsV1().DaemonSets(ds.Namespace).Create(bg, &ds, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("apiserver rejects deploy/apiserver/daemonset.yaml: %v", err)
	}
	// Bootstrap list: the first apiserver only; the rest come from the
	// default/kubernetes EndpointSlice. Every cluster source is watched
	// (the ConfigMap the shipped Role names, by resourceNames): the caches
	// sync only if the role allows each of them.
	a.runController(a.apiControllerArgs([]string{"--api-server", "https://" + apiAddr(lbAddr), "--token-file", token, "--ca-file", a.cluster.CAPath},
		"--bootstrap-servers", apiAddr(memberAddrs[0]),
		"--apiserver-sources", "endpointslice,configmap,nodes,static", "--apiserver-configmap", "kube-system/haproxy-k8s-sync-apiservers"))
	three := []string{apiAddr(memberAddrs[0]), apiAddr(memberAddrs[1]), apiAddr(memberAddrs[2])}
	a.within(converge+leaseMax, "the EndpointSlice's three apiservers up", a.serving(true, three...))
	a.within(converge, "the log says which source", func() error { return contains(a.ctlLog.String(), "source=endpointslice") })
	reloads := a.reloads()

	pooled, fresh := a.lbConfigs()
	clients := map[string]*clientLoop{"client-go": startClientLoop(t, pooled), "new connection per request": startClientLoop(t, fresh)}
	a.within(converge, "clients working", func() error {
		for n, c := range clients {
			if c.ok.Load() < 20 {
				return fmt.Errorf("%s: %d requests so far", n, c.ok.Load())
			}
		}
		return nil
	})

	// Kill one: HAProxy marks it down (health checks), then it leaves
	// the backend (its lease expires from the EndpointSlice).
	victim := memberAddrs[0]
	killed := time.Now()
	a.cluster.Kill(victim)
	down := a.within(converge, "HAProxy marks the killed apiserver down", func() error {
		got, err := a.backend()
		if err != nil {
			return err
		}
		if got[apiAddr(victim)] {
			return fmt.Errorf("%s still up", victim)
		}
		return nil
	})
	t.Logf("killed apiserver marked down after %v", down.Round(time.Millisecond))
	markedDown := time.Now()
	gone := a.within(leaseMax, "the controller removes the killed apiserver", a.serving(true, three[1:]...))
	t.Logf("killed apiserver removed after another %v (its lease expired)", gone.Round(time.Millisecond))

	// Start another: it joins through the Runtime API, no reload.
	a.member(memberAddrs[3])
	joined := a.within(converge, "the new apiserver up in the backend", a.serving(true, three[1], three[2], apiAddr(memberAddrs[3])))
	t.Logf("new apiserver served %v after it was ready", joined.Round(time.Millisecond))
	if got := a.reloads(); got != reloads {
		t.Errorf("HAProxy reloaded %d times for server changes, want 0", got-reloads)
	}
	// A new connection per request loses nothing; the pooled client at
	// most the one request in flight on the killed apiserver.
	clients["new connection per request"].check(t, "new connection per request")
	clients["client-go"].checkCut(t, "client-go", killed, markedDown)
	if strings.Contains(a.ctlLog.String(), "forbidden") {
		t.Errorf("the shipped RBAC is not enough:\n%s", tail(a.ctlLog.String(), 40))
	}
}

// Bootstrap: HAProxy and the controller start with --bootstrap-servers
// before any apiserver runs; once they run, traffic flows and the
// controller follows the cluster's list. Restarted with HAProxy (a
// reboot) while every apiserver is down, it serves the list it kept.
func TestAPIServerBootstrap(t *testing.T) {
	if !inNetns(t, append(slices.Clone(memberAddrs), lbAddr)...) {
		return
	}
	a := newAPILB(t)
	// .5 never runs: the cluster's list will not have it.
	bootstrap := apiAddr(memberAddrs[0]) + "," + apiAddr(memberAddrs[1]) + "," + apiAddr(memberAddrs[4])
	a.runController(a.apiControllerArgs(a.adminCreds(), "--bootstrap-servers", bootstrap))
	a.within(converge, "HAProxy serves the bootstrap list before any apiserver exists",
		a.serving(false, apiAddr(memberAddrs[0]), apiAddr(memberAddrs[1]), apiAddr(memberAddrs[4])))
	a.within(converge, "the controller waits for the API", func() error {
		return contains(a.ctlLog.String(), "kube-apiserver not reachable yet")
	})

	a.member(memberAddrs[0])
	a.member(memberAddrs[1])
	a.member(memberAddrs[2]) // not in the bootstrap list
	pooled, _ := a.lbConfigs()
	c := startClientLoop(t, pooled)
	cluster := []string{apiAddr(memberAddrs[0]), apiAddr(memberAddrs[1]), apiAddr(memberAddrs[2])}
	a.within(converge+leaseMax, "the controller follows the cluster's list", a.serving(true, cluster...))
	a.within(converge, "requests through the load balancer", func() error {
		if c.ok.Load() < 10 {
			return fmt.Errorf("%d requests so far", c.ok.Load())
		}
		return nil
	})
	c.check(t, "client-go")
	a.within(converge, "the list kept on disk", func() error {
		got, err := apiserverlb.LoadState(a.apiState)
		if err != nil {
			return err
		}
		if got.Source != apiserverlb.SourceEndpointSlice || len(got.Servers) != 3 {
			return fmt.Errorf("state file has %+v", got)
		}
		return nil
	})

	// Every apiserver down, the controller and HAProxy restarted from
	// scratch (a reboot: the config `init` writes, no frontend). The
	// bootstrap flag now names another server: the kept list wins.
	a.stopController()
	for _, m := range memberAddrs[:3] {
		a.cluster.Kill(m)
	}
	a.hap.Kill(t)
	a.startHAProxy()
	a.runController(a.apiControllerArgs(a.adminCreds(), "--bootstrap-servers", apiAddr(memberAddrs[4])))
	a.within(converge, "the kept list served while the API is down", a.serving(false, cluster...))
	a.within(converge, "the controller keeps trying the API", func() error {
		return contains(a.ctlLog.String(), "kube-apiserver not reachable yet")
	})
}
