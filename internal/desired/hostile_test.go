package desired

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Hostile input costs in proportion to its size, once: a Service with
// thousands of unknown annotations gets one Problem whose message lists a
// bounded number of them and counts the rest, and a later pass over the
// same object reuses it (a handful of allocations, whatever the count);
// a huge value is shown cut, and a key or protocol with a newline quoted.
func TestHostileAnnotations(t *testing.T) {
	const n = 2000
	in := hostileInput(n)
	in.Memo = &Memo{}
	r := Compute(in, defaults())
	if len(r.Problems) != 1 {
		t.Fatalf("problems %+v", r.Problems)
	}
	msg := r.Problems[0].Message
	if len(msg) > 8<<10 || !strings.Contains(msg, "; and 1990 more;") || !strings.Contains(msg, "x00000") {
		t.Errorf("message of %d bytes: %.300s...", len(msg), msg)
	}
	if a := testing.AllocsPerRun(3, func() { Compute(in, defaults()) }); a > 50 {
		t.Errorf("a later pass over the same Service allocates %v times", a)
	}
	if got := Compute(in, defaults()).Problems; len(got) != 1 || got[0].Message != msg {
		t.Errorf("later pass: %+v", got)
	}

	huge := strings.Repeat("x", 1<<20)
	weird := svc("default", "weird", 1, annotate("balance", huge), annotate("bad\nkey", "v"),
		func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "a\nb", Port: 81, Protocol: "SCTP\nINJECTED"})
		})
	r = Compute(Input{Services: []*corev1.Service{weird}, Nodes: nodes, LastGood: map[string]*settings.Settings{"default/weird": new(settings.Defaults())}}, defaults())
	if len(r.Problems) != 2 {
		t.Fatalf("problems %+v", r.Problems)
	}
	for _, p := range r.Problems {
		if strings.Contains(p.Message, "\n") || len(p.Message) > 2<<10 {
			t.Errorf("%s: message of %d bytes: %.400q", p.Reason, len(p.Message), p.Message)
		}
	}
	for _, want := range []string{`"xxxx`, `x"... (1048576 bytes)`, `annotation "haproxy-k8s-sync.io/bad\nkey"`} {
		if !strings.Contains(r.Problems[0].Message, want) {
			t.Errorf("%s: message %.400q lacks %q", r.Problems[0].Reason, r.Problems[0].Message, want)
		}
	}
	if want := `port "a\nb" (81): protocol "SCTP\nINJECTED" is not supported`; !strings.Contains(r.Problems[1].Message, want) {
		t.Errorf("%s: message %q lacks %q", r.Problems[1].Reason, r.Problems[1].Message, want)
	}
}

// An enabled annotation that decides whether a Service is taken, neither
// "true" nor "false", is reported rather than ignored, on every pass
// (memoised or not); the Service is not taken.
func TestEnabledValueReported(t *testing.T) {
	nodePort := func(v string) svcOpt {
		return func(s *corev1.Service) {
			s.Spec.Type, s.Spec.LoadBalancerClass = corev1.ServiceTypeNodePort, nil
			annotate("enabled", v)(s)
		}
	}
	in := Input{Services: []*corev1.Service{
		svc("a", "yes", 0, nodePort("true")),
		svc("a", "capital", 1, nodePort("True")),
		svc("a", "no", 2, nodePort("false")),
		svc("a", "classed", 3, annotate("enabled", "1"), func(s *corev1.Service) { s.Spec.Ports[0].Port = 81 }), // its class decides
	}, Nodes: nodes, Memo: &Memo{}}
	for pass := range 3 {
		r := Compute(in, defaults())
		if len(r.Configured) != 2 || r.Configured[0].Name != "yes" || r.Configured[1].Name != "classed" {
			t.Errorf("pass %d: configured %v", pass, r.Configured)
		}
		want := `annotation haproxy-k8s-sync.io/enabled: invalid value "True": want true or false; the Service is not taken`
		if len(r.Problems) != 1 || r.Problems[0].Service.Name != "capital" || r.Problems[0].Message != want {
			t.Errorf("pass %d: problems %+v", pass, r.Problems)
		}
	}
}
