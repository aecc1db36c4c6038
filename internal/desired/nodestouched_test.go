package desired

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/liveheap"
)

// TestNodesTouched: which node changes forget an entry's servers, and
// how (Memo.begin walks the entries with it).
func TestNodesTouched(t *testing.T) {
	changed := map[string]bool{"n1": true}
	flipped := map[string]bool{"n2": true}
	for _, c := range []struct {
		name             string
		nodes            []string
		changed, flipped map[string]bool
		want             int
	}{
		{"untracked", nil, changed, flipped, touchedNone},
		{"other nodes", []string{"n3", "n4"}, changed, flipped, touchedNone},
		{"address changed", []string{"n3", "n1"}, changed, flipped, touchedAddress},
		{"eligibility flipped", []string{"n2", "n3"}, changed, flipped, touchedEligibility},
		{"both: the address wins", []string{"n2", "n1"}, changed, flipped, touchedAddress},
		{"every node, an address changed", []string{""}, changed, nil, touchedAddress},
		{"every node, only a flip", []string{""}, nil, flipped, touchedEligibility},
	} {
		if got := nodesTouched(c.nodes, c.changed, c.flipped); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// TestMemoKeepsNoNodeIndex: the memo of 10,000 Local Services with 5
// endpoints each on 20 nodes keeps its entries' node lists only, no
// index of the entries by node (~1.5 MB more; issue 29's peak): what a
// first pass keeps, its Result and input aside, stays under 800 B a
// Service (872 B before, 724 B without the index).
func TestMemoKeepsNoNodeIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 Services")
	}
	const n = 10000
	in := fiveOnTwenty(n)
	var r Result
	whole := liveheap.Growth(func() { r = Compute(in, defaults()) })
	runtime.KeepAlive(r)
	r = Result{}
	memo := new(Memo)
	in.Memo = memo
	kept := liveheap.Growth(func() { r = Compute(in, defaults()) })
	runtime.KeepAlive(r)
	runtime.KeepAlive(memo)
	t.Logf("kept beside the Result: %d B (%d B a Service)", kept-whole, (kept-whole)/n)
	if per := (kept - whole) / n; per > 800 {
		t.Errorf("the memo keeps %d B a Service beside its Result (%d B in all), want at most 800 (main kept 872)", per, kept-whole)
	}
}

// fiveOnTwenty is n Local Services with 5 endpoints each on 20 nodes
// (issue 29's world).
func fiveOnTwenty(n int) Input {
	return bigInput(n, func(i int) []ep {
		var eps []ep
		for j := range 5 {
			eps = append(eps, ep{ip: fmt.Sprintf("192.168.%d.%d", i%250, j), node: fmt.Sprint("n", (i+j)%20), ready: true, serving: true})
		}
		return eps
	})
}
