package desired

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// A Memo never changes the result: random changes to Services, slices and
// nodes (each a new object, as informers deliver them), with and without
// the Memo, give equal Results.
func TestMemoGivesTheSameResult(t *testing.T) {
	for _, tc := range []struct {
		targets string
		invalid bool // some Services have invalid annotations
		track   bool // TrackNodes, and some Services without checks
		udp     bool // some second ports are UDP, and Options.UDP
		// distinct: each Service on ports of its own (no port conflict),
		// so that Services coming and going take servicesDelta.
		distinct bool
	}{{TargetNodes, true, false, false, false}, {TargetPods, true, false, true, false}, {TargetNodes, false, false, false, false},
		{TargetNodes, true, true, true, false}, {TargetNodes, false, true, false, false},
		{TargetNodes, false, true, false, true}, {TargetPods, false, false, false, true}, {TargetNodes, false, false, true, true}} {
		targets := tc.targets
		t.Run(fmt.Sprint(targets, tc.invalid, tc.track, tc.udp, tc.distinct), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			opts := defaults()
			opts.Targets = targets
			opts.TrackNodes = tc.track
			opts.UDP = tc.udp
			const nSvc, nNodes = 24, 6
			mkNode := func(i int) *corev1.Node {
				var lbl map[string]string
				if rng.IntN(5) == 0 {
					lbl = map[string]string{ExcludeLabel: ""}
				}
				return node(fmt.Sprint("n", i), fmt.Sprintf("10.0.0.%d", 1+rng.IntN(8)), rng.IntN(6) != 0, lbl)
			}
			mkSvc := func(i int) *corev1.Service {
				var o []svcOpt
				if rng.IntN(2) == 0 {
					o = append(o, local)
				}
				switch rng.IntN(6) {
				case 0:
					o = append(o, annotate("balance", "leastconn"))
				case 1:
					if tc.invalid {
						o = append(o, annotate("balance", "bogus"))
					}
				case 2:
					o = append(o, annotate("backend-port", "8443"))
				case 3:
					if tc.invalid { // not taken, reported (badOptIns)
						o = append(o, annotate("enabled", "yes"), func(s *corev1.Service) {
							s.Spec.Type, s.Spec.LoadBalancerClass = corev1.ServiceTypeNodePort, nil
						})
					}
				}
				if tc.track && rng.IntN(3) != 0 {
					o = append(o, annotate("check", "false"))
				}
				s := svc("ns", fmt.Sprint("s", i), rng.IntN(10), o...)
				s.Spec.Ports[0].Port = int32(80 + rng.IntN(20))
				if tc.distinct {
					s.Spec.Ports[0].Port = int32(80 + i)
				}
				s.Spec.Ports[0].NodePort = int32(30000 + i)
				if rng.IntN(4) == 0 {
					proto := corev1.ProtocolTCP
					if tc.udp && rng.IntN(2) == 0 {
						proto = corev1.ProtocolUDP
					}
					port := int32(200 + rng.IntN(20))
					if tc.distinct {
						port = int32(200 + i)
					}
					s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "b", Port: port, NodePort: int32(31000 + i), Protocol: proto})
				}
				return s
			}
			mkSlice := func(i int) *Slice {
				var eps []ep
				for j := range rng.IntN(4) {
					r := rng.IntN(3)
					eps = append(eps, ep{ip: fmt.Sprintf("192.168.%d.%d", i, j), node: fmt.Sprint("n", rng.IntN(nNodes+1)),
						ready: r == 0, serving: r < 2, terminating: r == 1})
				}
				// The shapes the endpoint-slice controller writes: the
				// Service's ports, one of them, another number for a
				// named targetPort, or none (Pods lacking the port).
				shapes := [][]sport{{tcp("http", 8080)}, {tcp("http", 8080), tcp("b", 8081)}, {tcp("b", 8081)}, {tcp("http", 9090)}, nil}
				return realSliceIn("ns", fmt.Sprint("s", i), fmt.Sprint(rng.IntN(1000)), shapes[rng.IntN(len(shapes))], eps...)
			}
			svcs := make([]*corev1.Service, nSvc)
			sls := make([]*Slice, 2*nSvc) // two slices per Service
			nodes := make([]*corev1.Node, nNodes)
			for i := range nSvc {
				svcs[i], sls[i], sls[nSvc+i] = mkSvc(i), mkSlice(i), mkSlice(i)
			}
			for i := range nNodes {
				nodes[i] = mkNode(i)
			}
			var memo Memo
			reused, udpSeen, serversOnly := 0, 0, 0
			var prevGood map[string]*settings.Settings
			var lastGood map[string]*settings.Settings
			var prevBackends []*model.Backend
			var prevValues []model.Backend
			for step := range 400 {
				switch rng.IntN(8) {
				case 0:
					i := rng.IntN(nSvc)
					svcs[i] = mkSvc(i)
				case 1, 2:
					i := rng.IntN(2 * nSvc)
					sls[i] = mkSlice(i % nSvc)
				case 3:
					i := rng.IntN(nNodes)
					nodes[i] = mkNode(i)
				}
				in := Input{LastGood: lastGood}
				for i := range nSvc {
					if (i+step/5)%11 != 0 { // Services come and go
						in.Services = append(in.Services, svcs[i])
					}
					in.Slices = append(in.Slices, sls[i], sls[nSvc+i])
				}
				for i := range nNodes {
					if (i+step)%7 != 0 {
						in.Nodes = append(in.Nodes, nodes[i])
					}
				}
				want := Compute(in, opts)
				in.Memo = &memo
				got := Compute(in, opts)
				checkChanges(t, step, got.Config, prevBackends)
				checkKept(t, step, prevBackends, prevValues)
				prevBackends, prevValues = got.Config.Backends, backendValues(got.Config.Backends)
				got.Config.Changes, got.FrontChanges = nil, nil // checked by TestIncrementalMatchesWholeWorld
				if got.ServersOnly {
					serversOnly++
				}
				got.ServersOnly = false // the same result, however it was reached
				got.GoodEdited = false  // the last pass's map, edited in place (delta.go)
				if prevGood != nil && reflect.ValueOf(got.Good).UnsafePointer() == reflect.ValueOf(prevGood).UnsafePointer() {
					reused++
				}
				prevGood = got.Good
				if len(got.Config.UDP) > 0 {
					udpSeen++
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d: with memo\n%+v\nwithout\n%+v", step, got, want)
				}
				lastGood = want.Good
			}
			if len(memo.entries) == 0 {
				t.Fatal("memo holds nothing")
			}
			if tc.udp && udpSeen == 0 {
				t.Fatal("no pass had a UDP port")
			}
			if !tc.invalid && reused == 0 {
				t.Fatal("the last pass's results were never reused")
			}
			if !tc.invalid && serversOnly == 0 {
				t.Fatal("no pass changed only servers")
			}
			if tc.distinct && memo.deltas == 0 {
				t.Fatal("no pass took the Services that came or went alone (servicesDelta)")
			}
			t.Logf("%d passes of 400 took the Services that came or went alone", memo.deltas)
		})
	}
}

// checkChanges verifies the contract of Config.Changes: derived from the
// previous pass's Backends, exactly the listed backends' servers differ.
func checkChanges(t *testing.T, step int, cfg model.Config, prev []*model.Backend) {
	t.Helper()
	ch := cfg.Changes
	if ch == nil {
		return
	}
	if len(ch.Base) != len(prev) || len(prev) == 0 || &ch.Base[0] != &prev[0] {
		t.Fatalf("step %d: Changes.Base is not the previous pass's Backends", step)
	}
	listed := map[int]bool{}
	for _, i := range ch.Backends {
		listed[i] = true
	}
	for i := range cfg.Backends {
		b, p := *cfg.Backends[i], *prev[i] // copies: the backends are shared
		p.Servers, b.Servers = nil, nil
		if !reflect.DeepEqual(b, p) {
			t.Fatalf("step %d: backend %d changed beyond its servers", step, i)
		}
		if differ := !reflect.DeepEqual(cfg.Backends[i].Servers, prev[i].Servers); differ && !listed[i] {
			t.Fatalf("step %d: backend %s changed but is not listed", step, cfg.Backends[i].Name)
		}
	}
}

// backendValues copies bs, servers and all.
func backendValues(bs []*model.Backend) []model.Backend {
	out := make([]model.Backend, len(bs))
	for i, b := range bs {
		out[i] = *b
		out[i].Servers = slices.Clone(b.Servers)
	}
	return out
}

// checkKept fails when a pass changed a backend of an earlier Result in
// place (the memo keeps and hands out the Result's own objects): bs
// must still be what values copied.
func checkKept(t *testing.T, step int, bs []*model.Backend, values []model.Backend) {
	t.Helper()
	for i, b := range bs {
		if !reflect.DeepEqual(*b, values[i]) {
			t.Fatalf("step %d: the last pass's backend %s changed in place:\n%+v\nwas\n%+v", step, b.Name, *b, values[i])
		}
	}
}
