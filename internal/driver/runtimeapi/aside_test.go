package runtimeapi

import (
	"reflect"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

// TestGrownWith: the pool after a growth reload aside is the one the
// passes meanwhile left, with the grown pool's classes and new spares; a
// new spare's occupant that took another spare meanwhile leaves it free,
// and a spare's slots are as the growth sized them.
func TestGrownWith(t *testing.T) {
	c0, c1 := model.Backend{Balance: "roundrobin"}, model.Backend{Balance: "leastconn"}
	sp := func(n, class int, occ string, slots int) spares.Spare {
		return spares.Spare{Name: spares.SpareName(n), Class: class, Occupant: occ, Slots: slots}
	}
	for _, tc := range []struct {
		name       string
		cur, grown spares.State
		want       spares.State
	}{
		{
			name:  "nothing meanwhile",
			cur:   spares.State{Classes: []model.Backend{c0}, Spares: []spares.Spare{sp(0, 0, "a", 0), sp(1, 0, "", 0)}},
			grown: spares.State{Classes: []model.Backend{c0}, Spares: []spares.Spare{sp(0, 0, "a", 0), sp(1, 0, "", 0), sp(2, 0, "", 8)}},
			want:  spares.State{Classes: []model.Backend{c0}, Spares: []spares.Spare{sp(0, 0, "a", 0), sp(1, 0, "", 0), sp(2, 0, "", 8)}},
		},
		{
			name:  "a Service came and one went meanwhile",
			cur:   spares.State{Classes: []model.Backend{c0}, Spares: []spares.Spare{sp(0, 0, "", 0), sp(1, 0, "c", 0)}},
			grown: spares.State{Classes: []model.Backend{c0}, Spares: []spares.Spare{sp(0, 0, "a", 0), sp(1, 0, "", 0), sp(2, 0, "", 0)}},
			want:  spares.State{Classes: []model.Backend{c0}, Spares: []spares.Spare{sp(0, 0, "", 0), sp(1, 0, "c", 0), sp(2, 0, "", 0)}},
		},
		{
			name:  "a waiting Service in a new spare, a new class",
			cur:   spares.State{Classes: []model.Backend{c0}, Spares: []spares.Spare{sp(0, 0, "a", 0)}},
			grown: spares.State{Classes: []model.Backend{c0, c1}, Spares: []spares.Spare{sp(0, 0, "a", 0), sp(1, 1, "w", 0), sp(2, 1, "", 0)}},
			want:  spares.State{Classes: []model.Backend{c0, c1}, Spares: []spares.Spare{sp(0, 0, "a", 0), sp(1, 1, "w", 0), sp(2, 1, "", 0)}},
		},
		{
			name:  "the waiting Service placed elsewhere meanwhile",
			cur:   spares.State{Classes: []model.Backend{c0}, Spares: []spares.Spare{sp(0, 0, "w", 0), sp(3, 0, "", 4)}},
			grown: spares.State{Classes: []model.Backend{c0}, Spares: []spares.Spare{sp(0, 0, "", 0), sp(1, 0, "w", 0), sp(3, 0, "", 12)}},
			want:  spares.State{Classes: []model.Backend{c0}, Spares: []spares.Spare{sp(0, 0, "w", 0), sp(1, 0, "", 0), sp(3, 0, "", 12)}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := grownWith(tc.cur, tc.grown); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
