package e2e

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/nodes"
)

// timeline records what a control-plane fault wrote that can empty a
// node-mode backend, each with the time it was seen: the nodes' Ready
// condition, the web Pods' Ready condition, how many endpoints of web's
// EndpointSlices are ready, and the status of web's servers in HAProxy
// (polled every 100 ms). The notes say which of them emptied the backend.
type timeline struct {
	mu     sync.Mutex
	events []string
	stop   chan struct{}
	done   chan struct{}
	// The spells in which web's EndpointSlices held no ready endpoint:
	// from the slices' change until HAProxy ran a server of web again.
	empty     []spell
	emptyFrom time.Time // the current spell's start, zero when none
	emptyOver bool      // the slices hold a ready endpoint again
}

// spell is a span of time.
type spell struct{ from, to time.Time }

func (s spell) holds(t time.Time) bool { return !t.Before(s.from) && !t.After(s.to) }

func (tl *timeline) add(format string, args ...any) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.events = append(tl.events, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}

// watchTimeline starts recording; finish stops it and returns the events
// and the spells in which web's EndpointSlices held no ready endpoint.
func (c *chaosEnv) watchTimeline() (finish func() ([]string, []spell)) {
	tl := &timeline{stop: make(chan struct{}), done: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(""))
	ready := func(conds []corev1.NodeCondition) string {
		for _, cd := range conds {
			if cd.Type == corev1.NodeReady {
				return string(cd.Status)
			}
		}
		return "none"
	}
	nodeReady := map[string]string{}
	_, _ = f.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { n := o.(*corev1.Node); nodeReady[n.Name] = ready(n.Status.Conditions) },
		UpdateFunc: func(_, o any) {
			n := o.(*corev1.Node)
			if r := ready(n.Status.Conditions); r != nodeReady[n.Name] {
				nodeReady[n.Name] = r
				tl.add("node %s Ready=%s", n.Name, r)
			}
		},
	})
	podReady := map[string]string{}
	podState := func(p *corev1.Pod) string {
		for _, cd := range p.Status.Conditions {
			if cd.Type == corev1.PodReady {
				return string(cd.Status)
			}
		}
		return "none"
	}
	_, _ = f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { p := o.(*corev1.Pod); podReady[p.Name] = podState(p) },
		UpdateFunc: func(_, o any) {
			p := o.(*corev1.Pod)
			if p.Namespace != ns || p.Labels["app"] != "web" {
				return
			}
			if r := podState(p); r != podReady[p.Name] {
				podReady[p.Name] = r
				tl.add("pod %s (on %s) Ready=%s", p.Name, p.Spec.NodeName, r)
			}
		},
	})
	slices := f.Discovery().V1().EndpointSlices()
	lastReady := -1
	countReady := func() {
		objs, _ := slices.Lister().EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: "web"}))
		n, all := 0, 0
		for _, s := range objs {
			for _, e := range s.Endpoints {
				all++
				if e.Conditions.Ready == nil || *e.Conditions.Ready {
					n++
				}
			}
		}
		if lastReady >= 0 && n != lastReady {
			tl.add("web's EndpointSlices: %d of %d endpoints ready", n, all)
			tl.mu.Lock()
			switch {
			case n == 0 && tl.emptyFrom.IsZero():
				tl.emptyFrom, tl.emptyOver = time.Now(), false
			case n > 0 && !tl.emptyFrom.IsZero():
				tl.emptyOver = true
			}
			tl.mu.Unlock()
		}
		lastReady = n
	}
	_, _ = slices.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { countReady() },
		UpdateFunc: func(_, _ any) { countReady() },
		DeleteFunc: func(any) { countReady() },
	})
	f.Start(tl.stop)
	f.WaitForCacheSync(tl.stop)
	// While the slices hold no ready endpoint: what a node's NodePort
	// answers without HAProxy (kube-proxy's verdict).
	var direct string
	if svc, err := c.client.CoreV1().Services(ns).Get(bg, "web", metav1.GetOptions{}); err == nil && len(svc.Spec.Ports) > 0 {
		direct = fmt.Sprintf("%s:%d", c.tier.Nodes[0].Addr, svc.Spec.Ports[0].NodePort)
	}
	go func() {
		defer close(tl.done)
		last, lastDirect := "", ""
		for range 3000 { // bounded: 300 s at 100 ms
			if rows, err := c.stat(); err == nil {
				var st []string
				serving := false
				for _, r := range rows {
					if c.isWeb(r.Proxy) && r.Server != "BACKEND" && r.Server != "FRONTEND" && r.Addr != "" {
						st = append(st, r.Addr+"="+r.Status)
						serving = serving || !r.Down()
					}
				}
				tl.mu.Lock()
				if tl.emptyOver && serving {
					tl.empty = append(tl.empty, spell{tl.emptyFrom, time.Now()})
					tl.emptyFrom, tl.emptyOver = time.Time{}, false
				}
				open := !tl.emptyFrom.IsZero()
				tl.mu.Unlock()
				if open && direct != "" {
					var err error
					_ = nodes.InNS(c.tier.LB, func() error { _, err = getHostname(direct); return nil })
					if d := fmt.Sprint(err); d != lastDirect {
						tl.add("%s (n1's NodePort) directly from the load balancer: err=%v", direct, err)
						lastDirect = d
					}
				}
				sort.Strings(st)
				if s := strings.Join(st, " "); s != last {
					tl.add("HAProxy %d: %s", chaosPort, s)
					last = s
				}
			}
			select {
			case <-tl.stop:
				return
			case <-time.After(100 * time.Millisecond): // the polling pace
			}
		}
	}()
	return func() ([]string, []spell) {
		close(tl.stop)
		<-tl.done
		f.Shutdown()
		tl.mu.Lock()
		defer tl.mu.Unlock()
		if !tl.emptyFrom.IsZero() { // not over when the fault was measured
			tl.empty = append(tl.empty, spell{tl.emptyFrom, time.Now()})
		}
		return tl.events, tl.empty
	}
}
