package e2e

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
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
}

func (tl *timeline) add(format string, args ...any) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.events = append(tl.events, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}

// watchTimeline starts recording; finish stops and returns the events.
func (c *chaosEnv) watchTimeline() (finish func() []string) {
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
	go func() {
		defer close(tl.done)
		last := ""
		for range 3000 { // bounded: 300 s at 100 ms
			if rows, err := c.stat(); err == nil {
				var st []string
				for _, r := range rows {
					if strings.Contains(r.Proxy, fmt.Sprint(chaosPort)) && r.Server != "BACKEND" && r.Server != "FRONTEND" && r.Addr != "" {
						st = append(st, r.Addr+"="+r.Status)
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
	return func() []string {
		close(tl.stop)
		<-tl.done
		f.Shutdown()
		tl.mu.Lock()
		defer tl.mu.Unlock()
		return tl.events
	}
}
