package desired

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// hostileInput is one Service with n annotations under the settings prefix
// that no setting knows ("haproxy-k8s-sync.io/x00042: v"): about 27 bytes
// each, so n=5,000 is ~135 KB, under the apiserver's 256 KB limit on a
// Service's annotations.
func hostileInput(n int) Input {
	s := svc("default", "hostile", 0)
	s.Annotations = make(map[string]string, n)
	for i := range n {
		s.Annotations[fmt.Sprintf("haproxy-k8s-sync.io/x%05d", i)] = "v"
	}
	return Input{Services: []*corev1.Service{s}, Nodes: nodes}
}

// BenchmarkUnknownAnnotations: a pass over one Service with n unknown
// annotations, without a Memo (the first pass, and every render) and with
// one the Service was already seen through (every later pass of run: the
// same object). The cost must grow linearly in n, and the memoised pass
// must not depend on n.
func BenchmarkUnknownAnnotations(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		in := hostileInput(n)
		b.Run(fmt.Sprintf("n=%d/first-pass", n), func(b *testing.B) {
			for b.Loop() {
				if r := Compute(in, defaults()); len(r.Problems) != 1 {
					b.Fatal(len(r.Problems))
				}
			}
		})
		b.Run(fmt.Sprintf("n=%d/later-pass", n), func(b *testing.B) {
			in := in
			in.Memo = &Memo{}
			Compute(in, defaults())
			for b.Loop() {
				if r := Compute(in, defaults()); len(r.Problems) != 1 {
					b.Fatal(len(r.Problems))
				} else if !strings.Contains(r.Problems[0].Message, "x00000") {
					b.Fatal(r.Problems[0].Message)
				}
			}
		})
	}
}
