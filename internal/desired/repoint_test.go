package desired

import (
	"runtime"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/liveheap"
)

// heldBack is in with a Memo and its last Service held back: a first
// pass takes the others, deltaPass the one held back.
func heldBack(in Input) (Input, *corev1.Service) {
	n := len(in.Services) - 1
	extra := in.Services[n]
	in.Services, in.Memo = in.Services[:n], new(Memo)
	return in, extra
}

// deltaPass adds extra to in (heldBack's) and computes the pass, which
// must be a delta pass (delta.go).
func deltaPass(tb testing.TB, in *Input, extra *corev1.Service) Result {
	tb.Helper()
	in.Services = append(in.Services, extra)
	deltas := in.Memo.deltas
	r := Compute(*in, defaults())
	if in.Memo.deltas != deltas+1 {
		tb.Fatalf("%s's pass was not a delta pass", extra.Name)
	}
	return r
}

// TestDeltaKeepsOneFrontendsArray: after a new Service's delta pass the
// memo keeps the new frontends array only, not the whole pass's beside
// it (issue 29's peak: 10,000 frontends of 168 B, ~1.7 MB, kept by the
// memo's ports until the next whole pass).
func TestDeltaKeepsOneFrontendsArray(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 Services")
	}
	const n = 10000
	in, extra := heldBack(fiveOnTwenty(n + 1))
	if r := Compute(in, defaults()); len(r.Config.Frontends) != n {
		t.Fatalf("%d frontends, want %d", len(r.Config.Frontends), n)
	}
	// The memo alone after the pass, as after the driver took it.
	grew := liveheap.Growth(func() { deltaPass(t, &in, extra) })
	runtime.KeepAlive(in.Memo)
	t.Logf("the memo grew %d B with one new Service", grew)
	if grew > 400<<10 {
		t.Errorf("the memo grew %d B with one new Service, want at most 400 KiB (two arrays of 10,000 frontends: +1.7 MB)", grew)
	}
}

// BenchmarkRepoint: a delta pass's move of 10,000 ports into its new
// array (one Service added), the ports where a whole pass left them.
//
//	go test -run '^$' -bench Repoint ./internal/desired/
func BenchmarkRepoint(b *testing.B) {
	in, extra := heldBack(fiveOnTwenty(10000 + 1))
	old := Compute(in, defaults()).Config.Frontends
	owners := in.Memo.feOwners
	next := deltaPass(b, &in, extra).Config.Frontends
	added := []*memoPort{&in.Memo.entries[extra].ports[0]}
	for b.Loop() {
		if got := repoint(old, next, owners, nil, added); len(got) != len(next) {
			b.Fatal(len(got))
		}
	}
}

// TestRepoint: the ports follow their frontends into the new array; an
// added port takes its frontend's place, also in the place of one
// dropped under the same name; and a new array that is not the old one
// with the drops and adds moves no port at all.
func TestRepoint(t *testing.T) {
	fes := func(names ...string) []model.Frontend {
		out := make([]model.Frontend, len(names))
		for i, n := range names {
			out[i] = model.Frontend{Name: n}
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		old, next []string
		dropped   []string
		added     []string
		owners    int // -1: as many as old
		wantNil   bool
	}{
		{name: "one added in the middle", old: []string{"a", "c"}, next: []string{"a", "b", "c"}, added: []string{"b"}, owners: -1},
		{name: "one dropped", old: []string{"a", "b", "c"}, next: []string{"a", "c"}, dropped: []string{"b"}, owners: -1},
		{name: "replaced", old: []string{"a", "b"}, next: []string{"a", "b"}, dropped: []string{"b"}, added: []string{"b"}, owners: -1},
		{name: "added first and last, dropped first", old: []string{"b", "c"}, next: []string{"a", "c", "d"}, dropped: []string{"b"}, added: []string{"a", "d"}, owners: -1},
		{name: "an element nobody added", old: []string{"a", "c"}, next: []string{"a", "b", "c"}, owners: -1, wantNil: true},
		{name: "a drop not in old", old: []string{"a"}, next: []string{"a"}, dropped: []string{"z"}, owners: -1, wantNil: true},
		{name: "an add not in next", old: []string{"a"}, next: []string{"a"}, added: []string{"z"}, owners: -1, wantNil: true},
		{name: "owners not parallel", old: []string{"a", "b"}, next: []string{"a", "b", "c"}, added: []string{"c"}, owners: 1, wantNil: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, next := fes(tc.old...), fes(tc.next...)
			n := tc.owners
			if n < 0 {
				n = len(old)
			}
			ports := make([]*memoPort, n)
			for i := range ports {
				ports[i] = &memoPort{haveProxies: true, fe: &old[i]}
			}
			var added []*memoPort
			for _, a := range tc.added {
				own := model.Frontend{Name: a}
				added = append(added, &memoPort{haveProxies: true, fe: &own})
			}
			was := make([]*model.Frontend, 0, len(ports)+len(added))
			for _, mp := range append(slices.Clone(ports), added...) {
				was = append(was, mp.fe)
			}
			got := repoint(old, next, ports, fes(tc.dropped...), added)
			if tc.wantNil {
				if got != nil {
					t.Fatalf("owners %v, want nil", got)
				}
				for k, mp := range append(slices.Clone(ports), added...) {
					if mp.fe != was[k] {
						t.Errorf("port %d moved to %s", k, mp.fe.Name)
					}
				}
				return
			}
			if len(got) != len(next) {
				t.Fatalf("%d owners for %d frontends", len(got), len(next))
			}
			for j := range next {
				if got[j] == nil || got[j].fe != &next[j] {
					t.Errorf("next[%d] (%s): owner %v does not point at it", j, next[j].Name, got[j])
				}
			}
			for k, mp := range ports {
				if slices.Contains(tc.dropped, old[k].Name) {
					if mp.fe != &old[k] {
						t.Errorf("dropped %s's port moved", old[k].Name)
					}
					continue
				}
				if !pointsInto(mp.fe, next) || mp.fe.Name != old[k].Name {
					t.Errorf("%s's port points at %s, not into next", old[k].Name, mp.fe.Name)
				}
			}
			for k, mp := range added {
				if !pointsInto(mp.fe, next) || mp.fe.Name != tc.added[k] {
					t.Errorf("added %s's port points at %s, not into next", tc.added[k], mp.fe.Name)
				}
			}
		})
	}
}
