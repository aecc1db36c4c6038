package desired

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A pass after Services came or went gives the whole compute's Result,
// taking only those Services (servicesDelta) when nothing they do reaches
// another one, and a whole pass otherwise (issue 29: a new Service object
// at 10,000 Services).
func TestServicesDelta(t *testing.T) {
	port := func(p int32, proto corev1.Protocol) svcOpt {
		return func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: fmt.Sprint("p", p), Port: p, NodePort: 30000 + p, Protocol: proto})
		}
	}
	ports := func(s *corev1.Service, p int32) { s.Spec.Ports[0].Port, s.Spec.Ports[0].NodePort = p, 30000+p }
	mk := func(name string, age int, p int32, o ...svcOpt) *corev1.Service {
		s := svc("ns", name, age, o...)
		ports(s, p)
		return s
	}
	base := func() []*corev1.Service {
		return []*corev1.Service{mk("a", 1, 81), mk("b", 2, 82, local), mk("c", 3, 83, annotate("check", "false"))}
	}
	for _, tc := range []struct {
		name   string
		change func(svcs []*corev1.Service) []*corev1.Service
		base   func() []*corev1.Service // nil: base
		delta  bool                     // the pass takes the change alone
	}{
		{"new Service object", func(s []*corev1.Service) []*corev1.Service { return append(s, mk("d", 4, 84)) }, nil, true},
		{"new Service, older than the others", func(s []*corev1.Service) []*corev1.Service { return append(s, mk("d", 0, 84)) }, nil, true},
		{"new Service, two ports", func(s []*corev1.Service) []*corev1.Service { return append(s, mk("d", 4, 84, port(184, ""))) }, nil, true},
		{"two new Services", func(s []*corev1.Service) []*corev1.Service { return append(s, mk("e", 5, 85), mk("d", 4, 84)) }, nil, true},
		{"new Service not taken", func(s []*corev1.Service) []*corev1.Service {
			n := mk("d", 4, 84)
			n.Spec.LoadBalancerClass = nil
			return append(s, n)
		}, nil, true},
		{"Service deleted", func(s []*corev1.Service) []*corev1.Service { return s[1:] }, nil, true},
		{"Service written again", func(s []*corev1.Service) []*corev1.Service {
			s[1] = s[1].DeepCopy()
			return s
		}, nil, true},
		{"Service changed to another port", func(s []*corev1.Service) []*corev1.Service {
			s[1] = s[1].DeepCopy()
			ports(s[1], 91)
			return s
		}, nil, true},
		{"the last Service following its nodes deleted", func(s []*corev1.Service) []*corev1.Service { return s[:2] }, nil, false},
		{"the last Service deleted", func(s []*corev1.Service) []*corev1.Service { return nil }, func() []*corev1.Service { return []*corev1.Service{mk("a", 1, 81)} }, true},
		{"Services swap ports", func(s []*corev1.Service) []*corev1.Service {
			s[0], s[1] = s[0].DeepCopy(), s[1].DeepCopy()
			ports(s[0], 82)
			ports(s[1], 81)
			return s
		}, nil, true},
		// Whole passes: the change reaches another Service, or has a Problem.
		{"new Service on a taken port", func(s []*corev1.Service) []*corev1.Service { return append(s, mk("d", 4, 82)) }, nil, false},
		{"new Service older on a taken port", func(s []*corev1.Service) []*corev1.Service { return append(s, mk("d", 0, 82)) }, nil, false},
		{"two new Services on one port", func(s []*corev1.Service) []*corev1.Service { return append(s, mk("d", 4, 84), mk("e", 5, 84)) }, nil, false},
		{"new Service with a bad annotation", func(s []*corev1.Service) []*corev1.Service {
			return append(s, mk("d", 4, 84, annotate("balance", "bogus")))
		}, nil, false},
		{"new Service asking for maxconn on the shared listener", func(s []*corev1.Service) []*corev1.Service {
			return append(s, mk("d", 4, 84, annotate("maxconn", "100")))
		}, nil, false},
		{"new Service badly opted in", func(s []*corev1.Service) []*corev1.Service {
			n := mk("d", 4, 84, annotate("enabled", "yes"))
			n.Spec.Type, n.Spec.LoadBalancerClass = corev1.ServiceTypeNodePort, nil
			return append(s, n)
		}, nil, false},
		{"new Service with a UDP port", func(s []*corev1.Service) []*corev1.Service {
			return append(s, mk("d", 4, 84, port(184, corev1.ProtocolUDP)))
		}, nil, false},
		{"new Service without a nodePort", func(s []*corev1.Service) []*corev1.Service {
			n := mk("d", 4, 84)
			n.Spec.Ports[0].NodePort = 0
			return append(s, n)
		}, nil, false},
		{"the winner of a conflict deleted", func(s []*corev1.Service) []*corev1.Service { return s[1:] },
			func() []*corev1.Service { return []*corev1.Service{mk("a", 1, 81), mk("b", 2, 81)} }, false},
		{"the first Service following its nodes", func(s []*corev1.Service) []*corev1.Service {
			return append(s, mk("d", 4, 84, annotate("check", "false")))
		},
			func() []*corev1.Service { return []*corev1.Service{mk("a", 1, 81, annotate("check", "true"))} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := defaults()
			opts.TrackNodes, opts.SharedListener = true, true
			opts.Binds = []netip.Addr{netip.MustParseAddr("10.255.0.1")}
			mkBase := base
			if tc.base != nil {
				mkBase = tc.base
			}
			svcs := mkBase()
			in := Input{Services: svcs, Nodes: nodes}
			for _, s := range svcs {
				in.Slices = append(in.Slices, slice("ns", s.Name, 8080, ep{ip: "192.168.0.1", node: "n1", ready: true, serving: true}))
			}
			in.Slices = append(in.Slices, slice("ns", "d", 8080, ep{ip: "192.168.0.4", node: "n2", ready: true, serving: true}))
			var memo Memo
			in.Memo = &memo
			first := Compute(in, opts)
			in.Services = tc.change(append([]*corev1.Service(nil), svcs...))
			got := Compute(in, opts)
			// A delta says which frontends it added and removed, a whole
			// pass nothing (model.FrontendChanges).
			if names, said := got.FrontChanges.ChangedFrom(got.Config.Frontends, first.Config.Frontends); said != tc.delta ||
				(said && !slices.Equal(names, model.ChangedFrontends(first.Config.Frontends, got.Config.Frontends))) {
				t.Fatalf("frontends changed %v (said %v), want %v", names, said, model.ChangedFrontends(first.Config.Frontends, got.Config.Frontends))
			}
			got.FrontChanges = nil
			in.Memo = nil
			want := Compute(in, opts)
			if got.GoodEdited != (memo.deltas == 1) {
				t.Fatalf("GoodEdited %v after %d deltas", got.GoodEdited, memo.deltas)
			}
			got.GoodEdited = false // the last pass's map, edited in place
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("with memo\n%+v\nwhole\n%+v", got, want)
			}
			if took := memo.deltas == 1; took != tc.delta {
				t.Fatalf("took the change alone: %v, want %v", took, tc.delta)
			}
			// The next pass, nothing changed, gives the same again: after
			// a delta, from the memo as the delta left it.
			in.Memo = &memo
			again := Compute(in, opts)
			if ch := again.Config.Changes; ch != nil && len(ch.Backends) == 0 {
				again.Config.Changes = nil // derived from the last pass, no backend changed (fast.go)
			}
			if (tc.delta && !again.ServersOnly) || !reflect.DeepEqual(again.Config, want.Config) {
				t.Fatalf("the pass after: servers only %v, equal %v", again.ServersOnly, reflect.DeepEqual(again.Config, want.Config))
			}
		})
	}
}

// spliced drops and adds elements of a sorted slice by binary search,
// and refuses a drop it cannot find or an add in another's place.
func TestSpliced(t *testing.T) {
	for _, tc := range []struct {
		old, drop, add []int
		want           []int
		ok             bool
	}{
		{old: []int{1, 3, 5}, want: []int{1, 3, 5}, ok: true},
		{old: []int{1, 3, 5}, add: []int{4}, want: []int{1, 3, 4, 5}, ok: true},
		{old: []int{1, 3, 5}, add: []int{6, 0, 2}, want: []int{0, 1, 2, 3, 5, 6}, ok: true},
		{old: []int{1, 3, 5}, drop: []int{1, 5}, want: []int{3}, ok: true},
		{old: []int{1, 3, 5}, drop: []int{3}, add: []int{3}, want: []int{1, 3, 5}, ok: true}, // replaced
		{old: []int{1, 3, 5}, drop: []int{3}, add: []int{2, 4}, want: []int{1, 2, 4, 5}, ok: true},
		{old: []int{1, 3}, drop: []int{1, 3}, want: nil, ok: true},
		{old: nil, add: []int{7}, want: []int{7}, ok: true},
		{old: []int{1, 3, 5}, drop: []int{4}, ok: false},    // not there
		{old: []int{1, 3, 5}, add: []int{3}, ok: false},     // in a kept one's place
		{old: []int{1, 3, 5}, add: []int{4, 4}, ok: false},  // twice
		{old: []int{1, 3, 5}, drop: []int{3, 3}, ok: false}, // dropped twice
		{old: []int{1, 3, 5}, drop: []int{3}, add: []int{3, 3}, ok: false},
	} {
		got, ok := spliced(tc.old, tc.drop, tc.add, func(a, b int) int { return a - b }, func(a, b int) bool { return a == b })
		if ok != tc.ok || (ok && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("spliced(%v, drop %v, add %v) = %v, %v; want %v, %v", tc.old, tc.drop, tc.add, got, ok, tc.want, tc.ok)
		}
	}
}

// A delta edits the last pass's Good in place (GoodEdited), unless the
// caller asked for copies (CopyGood: its writer reads that map): then the
// last Good stays as it was.
func TestServicesDeltaGood(t *testing.T) {
	for _, copyGood := range []bool{false, true} {
		t.Run(fmt.Sprint("copy=", copyGood), func(t *testing.T) {
			opts := defaults()
			opts.SharedListener = true
			opts.Binds = []netip.Addr{netip.MustParseAddr("10.255.0.1")}
			mk := func(name string, age int, p int32) *corev1.Service {
				s := svc("ns", name, age)
				s.Spec.Ports[0].Port, s.Spec.Ports[0].NodePort = p, 30000+p
				return s
			}
			var memo Memo
			in := Input{Services: []*corev1.Service{mk("a", 1, 81), mk("b", 2, 82)}, Memo: &memo}
			last := Compute(in, opts).Good
			memo.CopyGood(copyGood)
			in.Services = append(in.Services, mk("c", 3, 83))
			r := Compute(in, opts)
			if memo.deltas != 1 {
				t.Fatalf("%d deltas, want 1", memo.deltas)
			}
			if _, ok := r.Good["ns/c"]; !ok || len(r.Good) != 3 {
				t.Fatalf("Good %v", r.Good)
			}
			if _, edited := last["ns/c"]; edited != !copyGood || r.GoodEdited != !copyGood {
				t.Fatalf("the last Good holds the new Service: %v, GoodEdited %v; want %v", edited, r.GoodEdited, !copyGood)
			}
		})
	}
}
