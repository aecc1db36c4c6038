package ingress

import (
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// FuzzParseAnnotations: whatever an honoured annotation's value says,
// what reaches the model passes the model's validators (nothing a user
// writes becomes HAProxy syntax or a map separator).
func FuzzParseAnnotations(f *testing.F) {
	for i := range honoured {
		f.Add(i, "true")
		f.Add(i, "a.example.com")
		f.Add(i, "X-A: 1\nx-b 2")
	}
	f.Fuzz(func(t *testing.T, i int, v string) {
		if i < 0 {
			i = -i
		}
		s, _, refused := parseAnnotations(map[string]string{honoured[i%len(honoured)]: v})
		if refused != "" {
			return
		}
		for _, h := range s.set {
			if !model.ValidHeaderName(h.Name) || !model.ValidHeaderValue(h.Value) {
				t.Fatalf("header %q=%q from %q", h.Name, h.Value, v)
			}
		}
		for _, a := range append(s.aliases, s.redirectFrom...) {
			if !model.ValidSNI(a) {
				t.Fatalf("host %q from %q", a, v)
			}
		}
		if (s.canaryHeader != "" && !model.ValidHeaderName(s.canaryHeader)) || (s.canaryHdrWant != "" && !model.ValidHeaderValue(s.canaryHdrWant)) {
			t.Fatalf("canary header %q=%q from %q", s.canaryHeader, s.canaryHdrWant, v)
		}
	})
}
