package gateway

import (
	"strconv"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestRecentBackends: put leaves the map as putting each backend unless
// its name is there does (the first of a name kept), and looks up no
// backend among the last eight put again.
func TestRecentBackends(t *testing.T) {
	bs := make([]*model.Backend, 12)
	for i := range bs {
		bs[i] = &model.Backend{Name: "b" + strconv.Itoa(i%10)} // b10, b11: names of b0, b1 again
	}
	for _, tc := range []struct {
		name string
		puts []int
		hits int
	}{
		{"one backend again and again", []int{0, 0, 0, 0}, 3},
		{"two alternating", []int{0, 1, 0, 1, 1}, 3},
		{"nine: the first forgotten", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 0}, 0},
		{"eight: all remembered", []int{0, 1, 2, 3, 4, 5, 6, 7, 0, 7}, 2},
		{"another backend of a name there", []int{0, 10, 1, 11, 10}, 1},
		{"forgotten, then a name's other backend", []int{10, 1, 2, 3, 4, 5, 6, 7, 8, 0, 10}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rb recentBackends
			got, want := map[string]*model.Backend{}, map[string]*model.Backend{}
			for _, i := range tc.puts {
				rb.put(got, bs[i])
				if _, ok := want[bs[i].Name]; !ok {
					want[bs[i].Name] = bs[i]
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d backends, want %d", len(got), len(want))
			}
			for n, b := range want {
				if got[n] != b {
					t.Errorf("%s: %p, want %p (the first put)", n, got[n], b)
				}
			}
			if rb.Hits != tc.hits {
				t.Errorf("%d found among the last put, want %d", rb.Hits, tc.hits)
			}
		})
	}
}
