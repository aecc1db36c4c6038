package gateway

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOrderMemoIsTheSort: over random passes (routes added, deleted and
// replaced by new objects, many created in the same second, listed in a
// random order, some left out of a pass and back in the next), the kept
// order is the order of sorting every route,
// most routes are placed by their rank, and a second memo sorting the
// same routes in between (ranks of another order) changes neither.
func TestOrderMemoIsTheSort(t *testing.T) {
	for seed := range uint64(4) {
		rnd := rand.New(rand.NewPCG(seed, 8))
		made := 0
		mk := func() *route {
			made++
			i := rnd.IntN(60)
			meta := &metav1.ObjectMeta{Namespace: memoNS[rnd.IntN(2)], Name: "r" + strconv.Itoa(i),
				CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(rnd.IntN(4)) * time.Second))}
			r := &route{key: RouteKey{[]string{KindHTTPRoute, KindTCPRoute}[rnd.IntN(2)], Key{meta.Namespace, meta.Name}}, meta: meta}
			r.ks = r.key.String()
			return r
		}
		live := map[string]*route{}
		for range 40 {
			r := mk()
			live[r.ks] = r
		}
		var memo, other orderMemo
		kept, total := 0, 0
		for pass := range 200 {
			switch rnd.IntN(4) {
			case 0: // a new or replaced route (a new object)
				r := mk()
				live[r.ks] = r
			case 1:
				for k := range live {
					delete(live, k)
					break
				}
			case 2: // a route struct given another object's metadata
				for _, r := range live {
					meta := *r.meta
					meta.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(rnd.IntN(4)) * time.Second))
					r.meta = &meta
					break
				}
			}
			var in []*route
			for _, r := range live {
				if pass%5 == 4 && rnd.IntN(3) == 0 {
					continue // out of this pass, back in the next with its old rank
				}
				in = append(in, r)
			}
			rnd.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
			want := slices.Clone(in)
			slices.SortFunc(want, func(a, b *route) int { return older(a.meta, b.meta, a.ks, b.ks) })
			got := slices.Clone(in)
			memo.sorted(got)
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d pass %d: kept order %v, the sort's %v", seed, pass, keysOf(got), keysOf(want))
			}
			kept, total = kept+memo.Kept, total+len(in)
			if pass%7 == 0 { // another memo, as far on, ranks some of the same routes
				o := slices.Clone(in[:len(in)/2])
				other.gen = memo.gen
				other.sorted(o)
			}
		}
		if kept*10 < total*7 { // the other memo's passes rank them all again
			t.Errorf("seed %d: %d of %d routes placed by rank: want most", seed, kept, total)
		}
	}
}

func keysOf(rs []*route) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.meta.CreationTimestamp.Format("05")+" "+r.ks)
	}
	return out
}
