package memlimit

import (
	"log/slog"
	"math"
	"testing"
)

// A Start turns the proportional target off and bounds the heap by the
// model's limit and its room, or the limit in force when lower, or leaves
// the limit to a Tuner; End puts back what was in force, once.
func TestHoldStart(t *testing.T) {
	m := Model{Floor: 64 * mib, Base: 24 * mib, PerService: 4096, PerEndpoint: 256, RoomPercent: 10, Beside: 14 * mib}
	size := Size{Services: 10000, Endpoints: 50000}
	model := m.For(size, 0)
	withRoom := model + model/100*StartRoomPercent
	for _, tc := range []struct {
		name      string
		owned     bool  // the Start sets the limit (no Tuner)
		prevLimit int64 // in force before
		live      uint64
		streamed  bool  // the first lists were streamed: no room
		held      int64 // the limit while held
	}{
		{"no limit before: the model's and its room", true, math.MaxInt64, 0, false, withRoom},
		{"the operator's lower limit kept", true, 70 * mib, 0, false, 70 * mib},
		{"the operator's higher limit lowered", true, 500 * mib, 0, false, withRoom},
		{"a live heap above the prediction: room over it", true, math.MaxInt64, 200 * mib, false,
			(220*mib + 14*mib) + (220*mib+14*mib)/100*StartRoomPercent},
		{"a Tuner's limit left alone", false, 90 * mib, 0, false, 90 * mib},
		{"streamed lists: the model's alone", true, math.MaxInt64, 0, true, model},
		{"streamed lists, the operator's lower limit kept", true, 70 * mib, 0, true, 70 * mib},
		{"streamed lists, a live heap above the prediction: the model's room over it", true, math.MaxInt64, 200 * mib, true,
			220*mib + 14*mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gc, limit := 25, tc.prevLimit
			percent := func(v int) int { old := gc; gc = v; return old }
			setLimit := func(v int64) int64 {
				old := limit
				if v >= 0 {
					limit = v
				}
				return old
			}
			st := holdStart(m, size, tc.live, tc.owned, tc.streamed, percent, setLimit, slog.New(slog.DiscardHandler))
			if gc != -1 || limit != tc.held {
				t.Fatalf("held: GOGC %d, limit %.1f MiB; want off, %.1f MiB", gc, float64(limit)/mib, float64(tc.held)/mib)
			}
			st.End()
			if gc != 25 || limit != tc.prevLimit {
				t.Fatalf("ended: GOGC %d, limit %d; want 25, %d", gc, limit, tc.prevLimit)
			}
			gc, limit = 50, 123*mib // changed after: a second End does not undo it
			st.End()
			if gc != 50 || limit != 123*mib {
				t.Fatalf("a second End set GOGC %d, limit %d", gc, limit)
			}
		})
	}
}

// The operator's GOGC wins: nothing held; a nil Start's End does nothing.
func TestHoldStartGOGCSet(t *testing.T) {
	st := HoldStart(Default, Size{Services: 10000, Endpoints: 50000}, true, true, true, slog.New(slog.DiscardHandler))
	if st != nil {
		t.Fatalf("GOGC set: held %+v", st)
	}
	st.End()
}
