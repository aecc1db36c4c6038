package desired

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The backends of a Config are shared with the Configs of later passes
// (model.Config): no pass may change a Config it returned before. A
// sequence of passes with a Memo (servers, nodes and Services changing)
// leaves every earlier Config equal to the deep copy taken when it was
// returned.
func TestEarlierConfigsNeverChange(t *testing.T) {
	for _, targets := range []string{TargetNodes, TargetPods} {
		t.Run(targets, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			opts := defaults()
			opts.Targets = targets
			opts.TrackNodes = true
			opts.NodeCheck = model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 2, Port: 10256}
			const nSvc, nNodes = 30, 6
			mkNode := func(i int) *corev1.Node {
				var lbl map[string]string
				if rng.IntN(4) == 0 {
					lbl = map[string]string{ExcludeLabel: ""}
				}
				return node(fmt.Sprint("n", i), fmt.Sprintf("10.0.2.%d", i+1), rng.IntN(4) != 0, lbl)
			}
			mkSvc := func(i int) *corev1.Service {
				var o []svcOpt
				if i%2 == 0 {
					o = append(o, local)
				}
				if i%3 != 0 {
					o = append(o, annotate("check", "false")) // servers follow their nodes
				}
				if rng.IntN(3) == 0 {
					o = append(o, annotate("balance", "leastconn"))
				}
				s := svc("ns", fmt.Sprint("s", i), i, o...)
				s.Spec.Ports[0].Port = int32(1000 + i)
				return s
			}
			mkSlice := func(i int) *Slice {
				var eps []ep
				for j := range 1 + rng.IntN(4) {
					eps = append(eps, ep{ip: fmt.Sprintf("192.168.%d.%d", i, j), node: fmt.Sprint("n", rng.IntN(nNodes)),
						ready: rng.IntN(4) != 0, serving: true})
				}
				return slice("ns", fmt.Sprint("s", i), 8080, eps...)
			}
			var in Input
			for i := range nNodes {
				in.Nodes = append(in.Nodes, mkNode(i))
			}
			for i := range nSvc {
				in.Services = append(in.Services, mkSvc(i))
				in.Slices = append(in.Slices, mkSlice(i))
			}
			in.Memo = &Memo{}
			type returned struct {
				step      int
				cfg, copy model.Config
			}
			var history []returned
			check := func(step int, rs []returned) {
				t.Helper()
				for _, r := range rs {
					if !reflect.DeepEqual(r.cfg, r.copy) {
						t.Fatalf("after pass %d, the Config of pass %d changed:\nnow  %s\nwas  %s", step, r.step, dump(r.cfg), dump(r.copy))
					}
				}
			}
			derived := 0
			for step := range 300 {
				switch r := rng.IntN(10); {
				case r < 6: // endpoints: a pass that changes servers only
					i := rng.IntN(nSvc)
					in.Slices[i] = mkSlice(i)
				case r < 8: // a node: the NodesBackend's servers
					i := rng.IntN(nNodes)
					in.Nodes[i] = mkNode(i)
				case r < 9: // a Service: a full pass
					i := rng.IntN(nSvc)
					in.Services[i] = mkSvc(i)
				}
				res := Compute(in, opts)
				if res.Config.Changes != nil {
					derived++
				}
				history = append(history, returned{step, res.Config, deepCopy(res.Config)})
				check(step, history[max(0, len(history)-10):])
			}
			check(len(history), history)
			if derived < 100 {
				t.Fatalf("only %d of %d passes derived their Config from the last one: the shared path is not exercised", derived, len(history))
			}
		})
	}
}

func dump(cfg model.Config) string {
	s := ""
	for _, b := range cfg.Backends {
		s += fmt.Sprintf("%+v ", *b)
	}
	return s
}

// deepCopy copies v and everything it points to, through exported fields
// (unexported ones, as netip.Addr's, are copied as they are).
func deepCopy[T any](v T) T {
	return deepValue(reflect.ValueOf(&v).Elem()).Interface().(T)
}

func deepValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type().Elem())
		n.Elem().Set(deepValue(v.Elem()))
		return n
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			n.Index(i).Set(deepValue(v.Index(i)))
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			n.SetMapIndex(it.Key(), deepValue(it.Value()))
		}
		return n
	case reflect.Struct:
		n := reflect.New(v.Type()).Elem()
		n.Set(v)
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				n.Field(i).Set(deepValue(v.Field(i)))
			}
		}
		return n
	}
	return v
}
