// Package desiredtest is a small cluster for tests whose Nodes and
// EndpointSlices change at random (a seeded RNG, so a failure replays),
// passed through desired.Compute with a Memo as the controller does
// (the incremental pass) and from scratch (the whole world). The desired
// package compares both after every event; the runtimeapi package applies
// the incremental passes to a real HAProxy and compares what it runs with
// the whole world.
package desiredtest

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Nodes is how many nodes the world has (n0..n4); endpoints may also name
// n5, a node that does not exist.
const Nodes = 5

// Class is the loadBalancerClass of the world's Services.
const Class = desired.DefaultClass

// Kinds are the kinds of Service the world holds, two of each: every way
// a node change reaches a backend (servers following their node, checked
// on their own port, on the healthCheckNodePort, no check, pod targets;
// Cluster and Local).
var Kinds = []string{"own", "own-local", "track", "track-local", "hcnp-local", "nocheck", "pods", "two-ports-local"}

// World is the cluster and the Memo that has seen every pass of it.
type World struct {
	Seed uint64
	Opts desired.Options
	// Memo is the incremental pass's; Last its last Result.
	Memo desired.Memo
	Last desired.Result
	// Fast counts the passes the memo served incrementally.
	Fast int
	// Churn: Services are also deleted and created again (a new
	// object), which the memo may take alone (servicesDelta). Off, the
	// events of a seed are those they always were.
	Churn bool

	gone []bool // per Service, deleted (Churn)

	rng   *rand.Rand
	nodes []node
	svcs  []*corev1.Service
	sls   [][]*desired.Slice // per Service, its two slices (nil: deleted)
	log   []string
}

type node struct {
	present, ready, excluded bool
	ip                       int // 127.36.0.(1+ip)
	obj                      *corev1.Node
}

// New builds the world of seed, every node Ready, and runs its first
// pass. Node addresses are 127.36.0.x, endpoints 127.37.x.y; the
// Services listen on every address, ports 1000 and up.
func New(seed uint64) *World { return NewAt(seed, netip.Addr{}, nil) }

// NewAt is New with the Services listening on bind, each port taken from
// port (nil: 1000 and up).
func NewAt(seed uint64, bind netip.Addr, port func() int32) *World {
	w := &World{Seed: seed, rng: rand.New(rand.NewPCG(seed, 36))}
	w.Opts = desired.Options{Class: Class, Targets: desired.TargetNodes, Defaults: settings.Defaults(),
		TrackNodes: true, LocalHealthCheck: true,
		NodeCheck: model.Check{Enabled: true, Inter: time.Second, Rise: 2, Fall: 2, Port: 10256, HTTP: model.HTTPCheck{Path: "/healthz"}}}
	if bind.IsValid() {
		w.Opts.Binds = []netip.Addr{bind}
	}
	w.nodes = make([]node, Nodes)
	for i := range w.nodes {
		w.nodes[i] = node{present: true, ready: true, ip: i}
		w.renewNode(i)
	}
	for _, k := range Kinds {
		for j := range 2 {
			n := len(w.svcs)
			s := service(k, fmt.Sprintf("%s-%d", k, j), n)
			for p := range s.Spec.Ports {
				if port != nil {
					s.Spec.Ports[p].Port = port()
				}
			}
			w.svcs = append(w.svcs, s)
			w.sls = append(w.sls, []*desired.Slice{w.mkSlice(n, 0), w.mkSlice(n, 1)})
		}
	}
	w.Pass()
	return w
}

func service(kind, name string, n int) *corev1.Service {
	class := Class
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(time.Unix(int64(1000+n), 0))},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class,
			Ports: []corev1.ServicePort{{Name: "http", Port: int32(1000 + n), NodePort: int32(30000 + n), Protocol: corev1.ProtocolTCP}}},
	}
	check := func(v string) { s.Annotations = map[string]string{settings.Prefix + "check": v} }
	if strings.Contains(kind, "local") {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	switch kind {
	case "own", "own-local":
		check("true")
	case "nocheck":
		check("false")
	case "hcnp-local":
		s.Spec.HealthCheckNodePort = 32100
	case "pods":
		f := false
		s.Spec.AllocateLoadBalancerNodePorts = &f
	case "two-ports-local":
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "b", Port: int32(2000 + n), NodePort: int32(31000 + n), Protocol: corev1.ProtocolTCP})
	}
	return s
}

func (w *World) renewNode(i int) {
	n := &w.nodes[i]
	st := corev1.ConditionFalse
	if n.ready {
		st = corev1.ConditionTrue
	}
	var lbl map[string]string
	if n.excluded {
		lbl = map[string]string{desired.ExcludeLabel: ""}
	}
	n.obj = &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("n", i), Labels: lbl},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("127.36.0.%d", 1+n.ip)}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}},
		},
	}
}

// mkSlice is slice j of Service i, as the endpoint-slice controller
// writes one: up to four endpoints on random nodes, ready, terminating or
// not ready, carrying both port names.
func (w *World) mkSlice(i, j int) *desired.Slice {
	svc := fmt.Sprintf("%s-%d", Kinds[i/2], i%2)
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: svc + "-" + strconv.Itoa(j) + "-" + strconv.Itoa(w.rng.IntN(1000)),
			Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, p := range []struct {
		name string
		port int32
	}{{"http", 8080}, {"b", 8081}} {
		name, port, proto := p.name, p.port, corev1.ProtocolTCP
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &proto})
	}
	for k := range w.rng.IntN(5) {
		r := w.rng.IntN(4)
		ready, serving, term := r < 2, r < 3, r == 2
		nodeName := fmt.Sprint("n", w.rng.IntN(Nodes+1))
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("127.37.%d.%d", i, 10*j+k+1)},
			NodeName:   &nodeName,
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &term},
		})
	}
	return desired.SliceOf(s)
}

// Step applies one to three events (so that passes coalesce them, as
// the work queue does), then runs a pass.
func (w *World) Step() {
	for range 1 + w.rng.IntN(3) {
		w.event()
	}
	w.Pass()
}

func (w *World) event() {
	if w.Churn && w.rng.IntN(8) == 0 {
		s := w.rng.IntN(len(w.svcs))
		if w.gone == nil {
			w.gone = make([]bool, len(w.svcs))
		}
		w.gone[s] = !w.gone[s]
		if !w.gone[s] {
			w.svcs[s] = w.svcs[s].DeepCopy() // created again: a new object
		}
		w.logf("service %s deleted=%v", w.svcs[s].Name, w.gone[s])
		return
	}
	i := w.rng.IntN(Nodes)
	n := &w.nodes[i]
	s, j := w.rng.IntN(len(w.svcs)), w.rng.IntN(2)
	switch r := w.rng.IntN(21); {
	case r < 5:
		n.ready = !n.ready
		w.renewNode(i)
		w.logf("node n%d ready=%v", i, n.ready)
	case r < 7:
		n.excluded = !n.excluded
		w.renewNode(i)
		w.logf("node n%d excluded=%v", i, n.excluded)
	case r < 9:
		n.present = !n.present
		w.renewNode(i)
		w.logf("node n%d present=%v", i, n.present)
	case r < 10:
		n.ip = Nodes + w.rng.IntN(3)
		w.renewNode(i)
		w.logf("node n%d address 127.36.0.%d", i, 1+n.ip)
	case r < 15:
		w.sls[s][j] = w.mkSlice(s, j)
		w.logf("slice %s/%d replaced: %s", w.svcs[s].Name, j, endpoints(w.sls[s][j]))
	case r < 16:
		if w.sls[s][j] == nil {
			w.sls[s][j] = w.mkSlice(s, j)
		} else {
			w.sls[s][j] = nil
		}
		w.logf("slice %s/%d present=%v", w.svcs[s].Name, j, w.sls[s][j] != nil)
	case r < 17:
		// The slice written again, one endpoint on another node (a Pod
		// rescheduled under its address).
		if sl := w.sls[s][j]; sl != nil && len(sl.Endpoints) > 0 {
			c := *sl
			c.Endpoints = append([]desired.Endpoint(nil), sl.Endpoints...)
			k := w.rng.IntN(len(c.Endpoints))
			c.Endpoints[k].Node = fmt.Sprint("n", w.rng.IntN(Nodes))
			w.sls[s][j] = &c
			w.logf("slice %s/%d endpoint %d moved: %s", w.svcs[s].Name, j, k, endpoints(&c))
		}
	case r < 19:
		w.logf("resync")
	case r < 20:
		// The Service written again (its LoadBalancer status, say): a
		// new object, the same spec.
		w.svcs[s] = w.svcs[s].DeepCopy()
		w.logf("service %s written again", w.svcs[s].Name)
	default:
		// A relist after an apiserver outage: a new generation of the
		// informers, every object a new one with the same content.
		for k := range w.nodes {
			w.renewNode(k)
		}
		for k, svc := range w.svcs {
			w.svcs[k] = svc.DeepCopy()
			for j, sl := range w.sls[k] {
				if sl != nil {
					c := *sl
					w.sls[k][j] = &c
				}
			}
		}
		w.logf("relist")
	}
}

func endpoints(sl *desired.Slice) string {
	var b strings.Builder
	for _, e := range sl.Endpoints {
		fmt.Fprintf(&b, "%s@%s/%d ", e.Addr, e.Node, e.State)
	}
	return b.String()
}

func (w *World) logf(f string, a ...any) { w.log = append(w.log, fmt.Sprintf(f, a...)) }

// Log is the seed and the last n events, the last first.
func (w *World) Log(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d; events, the last first:\n", w.Seed)
	for i := len(w.log) - 1; i >= 0 && i >= len(w.log)-n; i-- {
		b.WriteString("  " + w.log[i] + "\n")
	}
	return b.String()
}

// Input is the world as the informers hold it now.
func (w *World) Input() desired.Input {
	var in desired.Input
	for i, s := range w.svcs {
		if i >= len(w.gone) || !w.gone[i] {
			in.Services = append(in.Services, s)
		}
	}
	for _, ss := range w.sls {
		for _, sl := range ss {
			if sl != nil {
				in.Slices = append(in.Slices, sl)
			}
		}
	}
	for _, n := range w.nodes {
		if n.present {
			in.Nodes = append(in.Nodes, n.obj)
		}
	}
	return in
}

// Pass runs the incremental pass (the World's Memo) into Last.
func (w *World) Pass() {
	in := w.Input()
	in.Memo = &w.Memo
	res := desired.Compute(in, w.Opts)
	if res.ServersOnly {
		w.Fast++
	}
	switch ch := res.Config.Changes; {
	case ch != nil:
		var names []string
		for _, i := range ch.Backends {
			names = append(names, res.Config.Backends[i].Name)
		}
		w.logf("  (incremental pass: %v)", names)
	case res.ServersOnly:
		w.logf("  (incremental pass: nothing changed)")
	default:
		w.logf("  (whole pass)")
	}
	w.Last = res
}

// Whole is a pass over the world as it is now, from scratch.
func (w *World) Whole() desired.Result { return desired.Compute(w.Input(), w.Opts) }

// Note adds a line to the log (a test's own events: a pass cut short).
func (w *World) Note(s string) { w.logf("%s", s) }
