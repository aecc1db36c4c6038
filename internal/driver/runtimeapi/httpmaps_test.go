package runtimeapi

import (
	"maps"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestHTTPMapFilesMemo: the files built through the driver's memos (a
// kind's file kept while its entries stay) are the files built from
// each table lowered whole, pass after pass: a route moved, back, a
// frontend renamed and one gone; the memos keep only the frontends of
// the last pass.
func TestHTTPMapFilesMemo(t *testing.T) {
	none := netip.MustParseAddrPort("127.0.0.1:1")
	cfg := func(name string, h *model.HTTP) model.Config {
		c := httpConfig(8080, h, none, none)
		c.Frontends[0].Name = name
		return c
	}
	two := cfg("gw_a", routeTable(50, "/x", 90))
	two.Frontends = append(two.Frontends, cfg("gw_b", routeTable(20, "/y", 10)).Frontends...)
	var memos httpMemos
	for _, tc := range []struct {
		name  string
		cfg   model.Config
		memos int
	}{
		{"first", cfg("gw_a", routeTable(50, "/x", 90)), 1},
		{"moved", cfg("gw_a", routeTable(50, "/moved", 90)), 1},
		{"reweighted", cfg("gw_a", routeTable(50, "/moved", 10)), 1},
		{"back", cfg("gw_a", routeTable(50, "/x", 90)), 1},
		{"two frontends", two, 2},
		{"renamed", cfg("gw_c", routeTable(50, "/x", 90)), 1},
		{"no HTTP", model.Config{}, 0},
		{"again", cfg("gw_a", routeTable(50, "/x", 90)), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, want := httpMapFiles("/acl", tc.cfg, &memos, true), httpMapFiles("/acl", tc.cfg, nil, false)
			for i := range got {
				checkFileEdit(t, got[i]) // then compared without it
				got[i].edit = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the files through the memos differ from those of the tables lowered whole")
			}
			if len(memos) != tc.memos {
				t.Errorf("%d memos kept, want %d", len(memos), tc.memos)
			}
		})
	}
}

// checkFileEdit fails t unless f's edit (the memo's, if any) takes the
// entries of the file it starts from to f's, as the worker is told.
func checkFileEdit(t *testing.T, f patternFile) {
	t.Helper()
	if f.edit == nil {
		return
	}
	from, _ := mapEntries(strings.Split(strings.TrimSuffix(string(f.edit.from), "\n"), "\n"))
	e, ok := knownEdit(f, heldMap{body: f.edit.from, entries: from})
	if !ok {
		return // no cheaper than the whole file
	}
	want, _ := mapEntries(f.allLines())
	if got := e.wanted(); !maps.Equal(got, want) {
		t.Errorf("%s: the edit %+v of the previous file gives\n%v\nwant\n%v", f.path, f.edit.edit, got, want)
	}
}
