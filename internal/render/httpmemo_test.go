package render

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/cputime"
)

// TestHTTPMapsMemo: a memo fed a sequence of tables gives HTTPMaps's maps
// for each, entry for entry and in order, and lowers only the actions
// and hosts that changed.
func TestHTTPMapsMemo(t *testing.T) {
	const n = 100
	moved := idTable(n, nil, nil)
	moved.Hosts[50].Rules[0].Path = "/moved"
	reweighted := idTable(n, nil, nil)
	reweighted.Actions[1+50].Backends[0].Weight = 50
	header := idTable(n, nil, nil) // a new header set: every set id may move
	header.Hosts[7].Rules[0].Headers = []model.HeaderMatch{{Name: "version", Value: "2"}}
	ext := idTable(n, nil, nil)
	ext.Actions[3].Ext = &model.HTTPActionExt{Host: "x.example.com", Timeout: time.Second,
		BackendMods: []model.HeaderMods{{Set: []model.HeaderValue{{Name: "x-b", Value: "1"}}}}}
	first := idTable(n, &model.HTTPHost{Name: "new.example.com", Rules: []model.HTTPRule{{PathType: model.PathExact, Path: "/new", Action: 0}}},
		&model.HTTPAction{Backends: []model.WeightedBackend{{Name: "c", Weight: 1}}})
	bad := idTable(n, nil, nil)
	bad.Hosts[9].Name = "bad name"
	bad.Hosts[10].Rules[0].Action = 10000
	bad.Listeners = []string{"a.example.com", "bad name"}
	memo := &HTTPMapsMemo{}
	var last map[string][]HTTPMapEntry
	counted := false
	for _, tc := range []struct {
		name    string
		table   *model.HTTP
		lowered int // at most: actions and hosts not in the memo
	}{
		{"first", idTable(n, nil, nil), 2*n + 1},
		{"same", idTable(n, nil, nil), 0},
		{"path moved", moved, 1},
		{"back", idTable(n, nil, nil), 1},
		{"weight", reweighted, 2}, // the action and its host (which names its new id)
		{"new header set", header, n + 1},
		{"extended action", ext, n + 2},         // the header set gone: every host again
		{"a route before all others", first, 4}, // with the extended action undone
		{"that route gone", idTable(n, nil, nil), 0},
		{"invalid host and action", bad, 2},
		{"nil", nil, 0},
		{"empty", &model.HTTP{}, 0},
		{"again", idTable(n, nil, nil), 2*n + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.table != nil {
				model.Shaped(tc.table) // after the changes above
			}
			got, want := memo.Maps(tc.table), HTTPMaps(tc.table)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("the memo's maps differ from HTTPMaps's:\n%v\nwant\n%v", got, want)
			}
			// Known after a table the memo counted (not the first, not nil).
			checkEditsIf(t, memo, last, got, counted && tc.table != nil) // httpedits_test.go
			last, counted = got, tc.table != nil
			if memo.Lowered > tc.lowered {
				t.Errorf("lowered %d actions and hosts, want at most %d", memo.Lowered, tc.lowered)
			}
		})
	}
}

// TestHTTPMapsMemoRandom: random tables changed at random, pass after
// pass, through one memo: always HTTPMaps's maps, and the edits known
// from Update before Build, whether a pass builds its maps or not.
func TestHTTPMapsMemoRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 20))
	split := rand.New(rand.NewPCG(30, 21)) // whether a pass builds its maps (Update, Build)
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	action := func() model.HTTPAction {
		a := model.HTTPAction{Backends: []model.WeightedBackend{{Name: pick("a", "b"), Weight: int32(r.IntN(3))}, {Name: "c", Weight: int32(r.IntN(2))}}}
		switch r.IntN(4) {
		case 0:
			a.Redirect = &model.Redirect{Scheme: "https", Code: 301, Host: pick("", "r.example.com")}
		case 1:
			a.Set = []model.HeaderValue{{Name: pick("x-a", "x-b"), Value: pick("1", "2")}}
		case 2:
			a.Ext = &model.HTTPActionExt{Path: &model.PathRewrite{Replace: pick("/", "/x"), Prefix: r.IntN(2) == 0}}
		}
		return a
	}
	rule := func(actions int) model.HTTPRule {
		x := model.HTTPRule{PathType: pick(model.PathExact, model.PathPrefix), Path: pick("/", "/a", "/a/b", "/b"), Action: r.IntN(actions)}
		if r.IntN(3) == 0 {
			x.Headers = []model.HeaderMatch{{Name: pick("version", "env"), Value: pick("1", "2")}}
		}
		if r.IntN(5) == 0 {
			x.Method = "GET"
		}
		return x
	}
	h := &model.HTTP{Port: 80}
	for range 20 {
		h.Actions = append(h.Actions, action())
	}
	for i := range 30 {
		h.Hosts = append(h.Hosts, model.HTTPHost{Name: "h" + strconv.Itoa(i) + ".example.com", Rules: []model.HTTPRule{rule(20), rule(20)}})
	}
	memo := &HTTPMapsMemo{}
	var last map[string][]HTTPMapEntry
	same, known := 0, 0
	for pass := range 300 {
		// Each pass's table shares what it did not change with the last
		// one (as the compilers' memos do): the memo's identity path.
		g := &model.HTTP{Port: h.Port, Actions: slices.Clone(h.Actions), Hosts: slices.Clone(h.Hosts)}
		twice := false
		for range 1 + r.IntN(3) {
			switch i := r.IntN(len(g.Hosts)); r.IntN(9) {
			case 4: // an action inserted, the rules after it renumbered (copied)
				at := r.IntN(len(g.Actions) + 1)
				g.Actions = slices.Insert(g.Actions, at, action())
				for k := range g.Hosts {
					g.Hosts[k].Rules = slices.Clone(g.Hosts[k].Rules)
					for j := range g.Hosts[k].Rules {
						if g.Hosts[k].Rules[j].Action >= at {
							g.Hosts[k].Rules[j].Action++
						}
					}
				}
			case 5: // a weight changed in place of a copy: the same place, new slices
				k := r.IntN(len(g.Actions))
				g.Actions[k].Backends = slices.Clone(g.Actions[k].Backends)
				g.Actions[k].Backends[0].Weight = int32(r.IntN(3))
			case 7: // a host twice (its entry written twice: edits unknown), for this pass only
				if !twice {
					g.Hosts, twice = append(g.Hosts, g.Hosts[i]), true
				}
			case 6: // another field changed, the backends kept
				k := r.IntN(len(g.Actions))
				g.Actions[k].Set = []model.HeaderValue{{Name: "x-c", Value: strconv.Itoa(r.IntN(3))}}
				g.Actions[k].Redirect = nil
			case 0:
				g.Actions[r.IntN(len(g.Actions))] = action()
			case 1:
				g.Hosts[i].Rules = append(slices.Clone(g.Hosts[i].Rules[:1]), rule(len(g.Actions)))
			case 2:
				g.Hosts[i].Name = "r" + strconv.Itoa(pass) + "-" + strconv.Itoa(i) + ".example.com" // names stay unique: edits known
			case 8: // a host put in among the others: every host after it one place on
				g.Hosts = slices.Insert(g.Hosts, i, model.HTTPHost{Name: "i" + strconv.Itoa(pass) + ".example.com", Rules: []model.HTTPRule{rule(len(g.Actions))}})
			case 3:
				g.Hosts = slices.Delete(g.Hosts, i, i+1)
				g.Hosts = append(g.Hosts, model.HTTPHost{Name: "n" + strconv.Itoa(pass) + ".example.com", Rules: []model.HTTPRule{rule(len(g.Actions))}})
			}
		}
		// Update, then Build (Maps), or Build left out: the edits are
		// known from Update alone, and a Build left out changes nothing
		// the next Update counts from (a pass cut short before the files).
		want := HTTPMaps(model.Shaped(g))
		memo.Update(g)
		if pass > 0 {
			checkEdits(t, memo, last, want) // httpedits_test.go
		}
		got := want
		if build := split.IntN(3); build > 0 {
			got = memo.Build()
			if build == 1 { // twice: the same maps
				got = memo.Build()
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("pass %d: the memo's maps differ from HTTPMaps's:\n%v\nwant\n%v", pass, got, want)
			}
		}
		checkSlots(t, pass, memo) // httpslots_test.go
		if _, unique := asMap(got[HTTPHosts]); !unique {
			if _, known := memo.Edits(); known {
				t.Fatalf("pass %d: a host written twice, and the edits known", pass)
			}
		}
		if _, ok := memo.Edits(); ok {
			known++
		}
		h, last, same = g, got, same+memo.Same
		if twice { // the next pass without the second one
			h = &model.HTTP{Port: g.Port, Actions: g.Actions, Hosts: g.Hosts[:len(g.Hosts)-1]}
		}
	}
	if known < 30 { // 39 with this seed
		t.Errorf("edits known in %d passes of 300: too few checked", known)
	}
	if same < 300*20 {
		t.Errorf("%d actions and hosts taken by identity in 300 passes: the fast path is not used", same)
	}
}

// TestHTTPMemoKeysTakeEveryField: every field of an action and of a host
// (and of what they hold) changes its key; a field added to the model
// and not to the keys fails here, before a memo serves a stale entry.
func TestHTTPMemoKeysTakeEveryField(t *testing.T) {
	aids := []string{"a0", "a1", "a2"}
	for _, tc := range []struct {
		name string
		typ  reflect.Type
		key  func(v any) string
	}{
		{"action", reflect.TypeFor[model.HTTPAction](), func(v any) string { return string(actionKey(nil, v.(model.HTTPAction))) }},
		{"host", reflect.TypeFor[model.HTTPHost](), func(v any) string { return string(hostKey(nil, v.(model.HTTPHost), aids)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := reflect.New(tc.typ).Elem()
			leaves := fillLeaves(base, -1, new(int))
			k0 := tc.key(base.Interface())
			for i := range leaves {
				v := reflect.New(tc.typ).Elem()
				fillLeaves(v, i, new(int))
				if tc.key(v.Interface()) == k0 {
					t.Errorf("field %s is not in the %s's key", leaves[i], tc.name)
				}
			}
			if len(leaves) < 5 {
				t.Fatalf("only %d fields seen: %v", len(leaves), leaves)
			}
		})
	}
}

// fillLeaves sets every field of v, recursively (a pointer to a value, a
// slice of one element), to 1, true or "1", the leaf numbered change to
// 2, false or "2"; it returns the leaves' names in that order.
func fillLeaves(v reflect.Value, change int, n *int) []string {
	var names []string
	leaf := func(name string) bool {
		names = append(names, name)
		*n++
		return *n-1 == change
	}
	if v.Type() == reflect.TypeFor[netip.Prefix]() {
		v.Set(reflect.ValueOf(netip.MustParsePrefix("10.0.0.0/8")))
		if leaf("Prefix") {
			v.Set(reflect.ValueOf(netip.MustParsePrefix("10.0.0.0/9")))
		}
		return names
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			for _, sub := range fillLeaves(v.Field(i), change, n) {
				names = append(names, v.Type().Field(i).Name+"."+sub)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return fillLeaves(v.Elem(), change, n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		return fillLeaves(v.Index(0), change, n)
	case reflect.String:
		v.SetString("1")
		if leaf(v.Type().Name()) {
			v.SetString("2")
		}
	case reflect.Bool:
		v.SetBool(true)
		if leaf("bool") {
			v.SetBool(false)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
		if leaf(v.Type().Name()) {
			v.SetInt(2)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
		if leaf(v.Type().Name()) {
			v.SetUint(2)
		}
	default:
		panic("a field of kind " + v.Kind().String() + ": teach fillLeaves and the memo's keys")
	}
	return names
}

// BenchmarkHTTPMaps: one route's path changed in a table of n routes
// (idTable), lowered whole (HTTPMaps, the baseline) and through a memo,
// and (new) a new route's host put in the table's middle and taken out
// again in turn (newRouteTable), through a memo (new-update: Update
// alone, the part of a pass before its edit is sent), side by side: the CPU a pass spends on the HTTP maps (cpu-ms/op: the
// wall time waits for a core on a shared machine). The changed table
// shares the other hosts' rules and the actions' slices with the first,
// as the compilers' memos hand them from pass to pass.
// go test ./internal/render -run '^$' -bench BenchmarkHTTPMaps -benchtime 50x
func BenchmarkHTTPMaps(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		for _, way := range []string{"whole", "memo", "new", "new-update"} {
			b.Run(strconv.Itoa(n)+"/"+way, func(b *testing.B) {
				t0 := idTable(n, nil, nil)
				var t1 *model.HTTP
				if strings.HasPrefix(way, "new") {
					t1 = newRouteTable(t0, n/2)
				} else {
					t1 = &model.HTTP{Port: t0.Port, Listeners: t0.Listeners, Actions: slices.Clone(t0.Actions), Hosts: slices.Clone(t0.Hosts)}
					t1.Hosts[n/2].Rules = slices.Clone(t1.Hosts[n/2].Rules)
					t1.Hosts[n/2].Rules[0].Path = "/moved"
					model.Shaped(t1)
				}
				tables := [2]*model.HTTP{t0, t1}
				memo := &HTTPMapsMemo{}
				memo.Maps(tables[0])
				i, cpu := 0, cputime.Used()
				for b.Loop() {
					i++
					switch way {
					case "whole":
						HTTPMaps(tables[i%2])
					case "new-update":
						memo.Update(tables[i%2]) // what a pass does before it sends the edit
					default:
						memo.Maps(tables[i%2])
					}
				}
				b.ReportMetric(float64((cputime.Used()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// newRouteTable is t with a new route's host inserted at place at (the
// table's hosts are in order, so a new route's host usually lands among
// them and moves every host after it) and its action appended (the
// compiler writes a new route's actions past the last table's), sharing
// every other host's rules and action's slices with t, as the
// compiler's memo hands them: one new HTTPRoute's table.
func newRouteTable(t *model.HTTP, at int) *model.HTTP {
	nt := &model.HTTP{Port: t.Port, Listeners: t.Listeners, Actions: slices.Clone(t.Actions)}
	nt.Actions = append(nt.Actions, model.HTTPAction{Backends: []model.WeightedBackend{{Name: "b", Weight: 1}}})
	nt.Hosts = append(slices.Clone(t.Hosts[:at]), model.HTTPHost{Name: "new" + strconv.Itoa(at) + ".example.com", Rules: []model.HTTPRule{
		{PathType: model.PathExact, Path: "/new", Action: len(nt.Actions) - 1},
	}})
	nt.Hosts = append(nt.Hosts, t.Hosts[at:]...)
	return model.Shaped(nt)
}
