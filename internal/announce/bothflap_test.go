package announce

import (
	"math/rand"
	"net/netip"
	"testing"
	"time"
)

// TestNodeBothGatesFlap: two hosts (the chart's two nodes), one address;
// both health gates flap at random for up to 3 s (a loaded node's
// HAProxy answering late on both), heartbeats every tick but delayed at
// random by up to 400 ms meanwhile (so reordered, and replays refused),
// each flap announced at once. Once both are healthy again, the address
// has one owner within 2 s and keeps it: never two holders for longer
// than a second (the hand-over seen in real Pods, where both nodes held
// it, is not the agreement's), never none at the end. 500 schedules.
func TestNodeBothGatesFlap(t *testing.T) {
	addr := netip.MustParseAddr("198.18.0.200")
	want := func(ok bool) Want { return Want{Addrs: []netip.Addr{addr}, Healthy: ok} }
	type msg struct {
		at time.Time
		to int
		hb Heartbeat
	}
	const step = 10 * time.Millisecond
	for seed := int64(0); seed < 500; seed++ {
		rng := rand.New(rand.NewSource(seed))
		t0 := time.Unix(1000, 0)
		ns := []*Node{NewNode("n1", hold, t0), NewNode("n2", hold, t0)}
		healthy := []bool{true, true}
		for _, n := range ns {
			n.HoldDown(10 * time.Second)
			n.Set(want(true))
		}
		phase := []time.Duration{0, time.Duration(rng.Intn(10)) * step}
		flapFrom := t0.Add(15 * time.Second)
		flapTo := flapFrom.Add(time.Duration(rng.Intn(3000)) * time.Millisecond)
		var q []msg
		send := func(i int, now time.Time, most time.Duration) {
			q = append(q, msg{now.Add(time.Duration(rng.Int63n(int64(most)))), 1 - i, ns[i].Heartbeat()})
		}
		var two time.Time // since when both hold
		for now := t0; now.Before(flapTo.Add(15 * time.Second)); now = now.Add(step) {
			flapping := now.After(flapFrom) && now.Before(flapTo)
			for i, n := range ns {
				switch {
				case flapping && rng.Intn(30) == 0, !flapping && !healthy[i] && now.After(flapTo):
					healthy[i] = !healthy[i]
					n.Set(want(healthy[i]))
					n.Decide(now)
					send(i, now, 50*time.Millisecond)
				}
			}
			var later []msg
			for _, m := range q {
				if m.at.After(now) {
					later = append(later, m)
					continue
				}
				if ch, err := ns[m.to].Receive(m.hb, now); err == nil && ch && !ns[m.to].Decide(now).Empty() {
					later = append(later, msg{now.Add(time.Duration(rng.Intn(50)) * time.Millisecond), 1 - m.to, ns[m.to].Heartbeat()})
				}
			}
			q = later
			for i, n := range ns {
				if (now.Sub(t0)-phase[i])%tick == 0 {
					n.Decide(now)
					most := 60 * time.Millisecond
					if now.After(flapFrom) && now.Before(flapTo.Add(time.Second)) {
						most = 400 * time.Millisecond
					}
					send(i, now, most)
				}
			}
			if len(ns[0].Holds()) == 0 || len(ns[1].Holds()) == 0 {
				two = time.Time{}
				continue
			}
			if two.IsZero() {
				two = now
			}
			if now.Sub(two) > time.Second && now.After(flapTo.Add(2*time.Second)) {
				t.Fatalf("seed %d: both hold %s since +%v (gates flapped +%v to +%v)", seed, addr, two.Sub(t0), flapFrom.Sub(t0), flapTo.Sub(t0))
			}
		}
		if k := len(ns[0].Holds()) + len(ns[1].Holds()); k != 1 {
			t.Fatalf("seed %d: at the end n1 holds %v, n2 %v", seed, ns[0].Holds(), ns[1].Holds())
		}
	}
}
