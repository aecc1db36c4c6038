package desired

import (
	"fmt"
	"maps"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/liveheap"
)

// TestGoodSharesTheMemoSettings: a memoised pass's Good holds, for each
// Service, the memo's shared settings object, not a copy of its own (issue
// 29's peak: a map of 10,000 settings by value was 2.25 MB). A whole pass
// and a delta pass (a new Service) alike, and the map itself keeps a few
// dozen bytes a Service.
func TestGoodSharesTheMemoSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 Services")
	}
	const n = 10000
	in, extra := heldBack(fiveOnTwenty(n + 1))
	memo := in.Memo
	r := Compute(in, defaults())
	if len(r.Good) != n {
		t.Fatalf("Good holds %d Services, want %d", len(r.Good), n)
	}
	objects := map[*settings.Settings]bool{}
	for _, s := range in.Services {
		e := memo.entries[s]
		if e == nil || r.Good[key(s)] != e.set {
			t.Fatalf("%s: Good holds %p, the memo's entry %v", key(s), r.Good[key(s)], e)
		}
		objects[e.set] = true
	}
	if len(objects) != 1 { // every Service of this world has the defaults
		t.Errorf("%d settings objects for equal settings, want 1", len(objects))
	}
	var clone map[string]*settings.Settings
	per := liveheap.Growth(func() { clone = maps.Clone(r.Good) }) / n
	runtime.KeepAlive(clone)
	t.Logf("Good's map: %d B a Service", per)
	if per > 64 {
		t.Errorf("Good's map keeps %d B a Service, want at most 64 (settings by value: ~190)", per)
	}

	// A new Service, added by a delta pass: the memo's object too.
	s := extra
	r = deltaPass(t, &in, s)
	if got := r.Good[key(s)]; got == nil || got != memo.entries[s].set || !objects[got] {
		t.Errorf("the new Service's Good is %p, not the memo's shared object", got)
	}
}

// A Service whose annotations turned invalid keeps the very object of
// its last good settings (Input.LastGood), no copy.
func TestGoodKeepsTheLastGoodObject(t *testing.T) {
	last := settings.Defaults()
	last.Balance = "leastconn"
	for _, withMemo := range []bool{false, true} {
		t.Run(fmt.Sprint("memo=", withMemo), func(t *testing.T) {
			in := Input{Nodes: nodes[:1], Services: []*corev1.Service{svc("default", "web", 0, annotate("balance", "bogus"))},
				LastGood: map[string]*settings.Settings{"default/web": &last}}
			if withMemo {
				in.Memo = new(Memo)
			}
			r := Compute(in, defaults())
			if r.Good["default/web"] != &last {
				t.Errorf("Good holds %p, want the last good object %p", r.Good["default/web"], &last)
			}
		})
	}
}
