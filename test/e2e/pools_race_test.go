package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// publications follows, through watches, which objects' statuses list
// which addresses, and records every moment one address is listed by two
// objects at once.
type publications struct {
	mu         sync.Mutex
	have       map[string][]string  // "Service default/x", "Gateway default/y": addresses
	first      map[string]time.Time // when each object's status first listed an address
	violations []string
}

func (p *publications) set(obj string, addrs []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.have[obj] = addrs
	if _, ok := p.first[obj]; !ok && len(addrs) > 0 {
		p.first[obj] = time.Now()
	}
	for other, as := range p.have {
		for _, a := range addrs {
			if other != obj && slices.Contains(as, a) {
				p.violations = append(p.violations, fmt.Sprintf("%s published to %s and %s at once", a, other, obj))
			}
		}
	}
}

func (p *publications) gone(obj string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.have, obj)
}

// holders lists the objects whose status lists addr, and whether each of
// objs is known (created and not deleted) to the watches.
func (p *publications) holders(addr string, objs ...string) (holders []string, known int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for o, as := range p.have {
		if slices.Contains(as, addr) {
			holders = append(holders, o)
		}
	}
	for _, o := range objs {
		if _, ok := p.have[o]; ok {
			known++
		}
	}
	slices.Sort(holders)
	return holders, known
}

// follow runs a retrying watch from list's resourceVersion, calling
// handle for every event, until ctx ends.
func follow(ctx context.Context, t *testing.T, lw cache.WatcherWithContext, rv string, handle func(watch.Event)) {
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				handle(ev)
			}
		}
	}()
}

// The Services mode and the gateway mode, each its own controller with
// its own HAProxy and exactly its shipped role, share an AddressPool of
// one address. Round after round a new LoadBalancer Service and a new
// Gateway are created at the same instant, each asking for an address;
// watches on both kinds follow every status write. No address is ever
// listed by the statuses of two objects at once, and each round one of
// them gets it (the other waits: the pool is exhausted); both deleted,
// the address is free again (its claim released) for the next round.
func TestPoolAddressRace(t *testing.T) {
	const (
		rounds = 12
		addr   = "198.18.3.1"
	)
	if !inPoolNetns(t, "198.18.3.0/30", podAddrs...) {
		return
	}
	g := newGatewayEnv(t)
	dyn := g.addressPools(addressPool{"race", map[string]any{"addresses": []any{addr + "/32"}}})
	s := newEnvOn(t, g.kube)
	s.addNode("n1", 1, true)
	s.startController(s.withRole(s.rbacTokenFile(), "--address-pools")...)
	gwToken := g.rbacTokenFileAs("haproxy-k8s-sync-gateway", "../../deploy/gateway/rbac.yaml", "../../deploy/gateway/address-pools-rbac.yaml")
	g.startController(g.withRole(gwToken, "--mode=gateway", "--address-pools")...)
	s.eventually("the Services mode counts the pool", poolCounts(dyn, "race", 0, 1))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pubs := &publications{have: map[string][]string{}, first: map[string]time.Time{}}
	svcs := s.client.CoreV1().Services(ns)
	gws := g.gw.GatewayV1().Gateways(ns)
	sl, err := svcs.List(bg, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	follow(ctx, t, &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return svcs.Watch(ctx, o)
	}}, sl.ResourceVersion, func(ev watch.Event) {
		o, ok := ev.Object.(*corev1.Service)
		if !ok || o.Spec.Type != corev1.ServiceTypeLoadBalancer {
			return
		}
		key := "Service " + o.Namespace + "/" + o.Name
		if ev.Type == watch.Deleted {
			pubs.gone(key)
			return
		}
		var as []string
		for _, in := range o.Status.LoadBalancer.Ingress {
			as = append(as, in.IP)
		}
		pubs.set(key, as)
	})
	gl, err := gws.List(bg, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	follow(ctx, t, &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return gws.Watch(ctx, o)
	}}, gl.ResourceVersion, func(ev watch.Event) {
		o, ok := ev.Object.(*gwv1.Gateway)
		if !ok {
			return
		}
		key := "Gateway " + o.Namespace + "/" + o.Name
		if ev.Type == watch.Deleted {
			pubs.gone(key)
			return
		}
		var as []string
		for _, a := range o.Status.Addresses {
			as = append(as, a.Value)
		}
		pubs.set(key, as)
	})

	won := map[string]int{}
	var took []time.Duration // from the creates to the winner's status
	for i := range rounds {
		svc, gw := fmt.Sprintf("race-svc-%d", i), fmt.Sprintf("race-gw-%d", i)
		objs := []string{"Service " + ns + "/" + svc, "Gateway " + ns + "/" + gw}
		start := make(chan struct{})
		var wg sync.WaitGroup
		var errs [2]error
		wg.Go(func() {
			<-start
			_, errs[0] = lab.CreateService(bg, s.client, lab.Service{Namespace: ns, Name: svc, Port: 443})
		})
		wg.Go(func() {
			<-start
			_, errs[1] = gws.Create(bg, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: gw},
				Spec: gwv1.GatewaySpec{GatewayClassName: "hks", Listeners: []gwv1.Listener{listener("tcp", gwv1.TCPProtocolType, 9000, "")}}},
				metav1.CreateOptions{})
		})
		created := time.Now()
		close(start)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		var winner []string
		s.eventually(fmt.Sprintf("round %d: one of them has %s", i, addr), func() error {
			h, known := pubs.holders(addr, objs...)
			if len(h) != 1 || known != 2 {
				return fmt.Errorf("listed by %v (%d of 2 objects seen)", h, known)
			}
			winner = h
			return nil
		})
		won[strings.Fields(winner[0])[0]]++
		pubs.mu.Lock()
		took = append(took, pubs.first[winner[0]].Sub(created))
		pubs.mu.Unlock()
		if err := svcs.Delete(bg, svc, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := gws.Delete(bg, gw, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		s.eventually(fmt.Sprintf("round %d: both gone, %s free again", i, addr), func() error {
			if h, known := pubs.holders(addr, objs...); len(h) > 0 || known > 0 {
				return fmt.Errorf("listed by %v, %d of the round's objects not yet deleted", h, known)
			}
			if _, err := s.client.NetworkingV1().IPAddresses().Get(bg, addr, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the claim of %s is still there (%v)", addr, err)
			}
			return nil
		})
	}
	pubs.mu.Lock()
	defer pubs.mu.Unlock()
	slices.Sort(took)
	t.Logf("%d rounds: won by %v; %d moments an address was listed twice; creates to the winner's status: median %v, max %v",
		rounds, won, len(pubs.violations), took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	for _, v := range pubs.violations {
		t.Error(v)
	}
}

// A role without the claims' rule (this release's RBAC not applied) stops
// the controller at start with an error naming the rule, instead of
// caches that never sync.
func TestAddressPoolsWithoutClaimRBAC(t *testing.T) {
	e := newEnv(t)
	e.addressPools()
	b, err := os.ReadFile("../../deploy/services/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const rule = "  - apiGroups: [\"networking.k8s.io\"]\n    resources: [\"ipaddresses\"]\n"
	if !strings.Contains(string(b), rule) {
		t.Fatalf("deploy/services/rbac.yaml has no rule %q", rule)
	}
	old := filepath.Join(t.TempDir(), "rbac.yaml")
	if err := os.WriteFile(old, []byte(strings.Replace(string(b), rule, "  - apiGroups: [\"networking.k8s.io\"]\n    resources: [\"ingresses\"]\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.startController(e.withRole(e.rbacTokenFileFrom(old), "--address-pools")...)
	select {
	case err := <-e.ctlDone:
		if err == nil || !strings.Contains(err.Error(), "may not list them: grant list, watch, create and delete on ipaddresses") {
			t.Errorf("controller stopped with %v, want the missing rule named", err)
		}
		e.ctlCancel()
		e.ctlCancel = nil
	case <-time.After(converge):
		t.Fatalf("the controller still runs without the claims' rule")
	}
}
