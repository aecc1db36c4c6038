package runtimeapi

import (
	"bytes"
	"maps"
	"net/netip"
	"reflect"
	"slices"
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
		early bool // the files listed before they are built
	}{
		{"first", cfg("gw_a", routeTable(50, "/x", 90)), 1, false},
		{"moved", cfg("gw_a", routeTable(50, "/moved", 90)), 1, true},
		{"reweighted", cfg("gw_a", routeTable(50, "/moved", 10)), 1, true},
		{"back", cfg("gw_a", routeTable(50, "/x", 90)), 1, true},
		{"two frontends", two, 2, false}, // gw_b's first table
		{"unchanged", two, 2, true},
		{"renamed", cfg("gw_c", routeTable(50, "/x", 90)), 1, false},
		{"no HTTP", model.Config{}, 0, true},
		{"again", cfg("gw_a", routeTable(50, "/x", 90)), 1, false},
		{"new route", cfg("gw_a", withNewRoute(routeTable(50, "/x", 90), 25)), 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			early, build := httpMapUpdate("/acl", tc.cfg, &memos, true)
			got, want := build(), httpMapFiles("/acl", tc.cfg, nil, false)
			checkEarly(t, early, got, tc.early)
			for i := range got {
				checkFileEdit(t, got[i])         // then compared without it
				got[i].edit, got[i].ver = nil, 0 // and its version
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

// checkEarly fails t unless early (httpMapUpdate's) is nil exactly when
// not want, and otherwise lists built's files in order: a file the
// same (its bytes), or pending with the edit built's file carries.
func checkEarly(t *testing.T, early, built []patternFile, want bool) {
	t.Helper()
	if (early != nil || len(built) == 0) != want {
		t.Fatalf("files listed before they are built: %v, want %v", early != nil, want)
	}
	if early == nil {
		return
	}
	if len(early) != len(built) {
		t.Fatalf("%d files listed before they are built, %d built", len(early), len(built))
	}
	pending := 0
	for i, f := range early {
		b := built[i]
		switch {
		case f.path != b.path:
			t.Errorf("file %d: %s listed, %s built", i, f.path, b.path)
		case f.pending:
			pending++
			if b.edit == nil || !reflect.DeepEqual(*f.edit, *b.edit) || f.count() != b.count() {
				t.Errorf("%s: pending with edit %+v (%d entries), built with %+v (%d)", f.path, f.edit, f.count(), b.edit, b.count())
			}
		case !bytes.Equal(f.body, b.body):
			t.Errorf("%s: listed as the last file built, and built anew", f.path)
		}
	}
	if pending == 0 && !slices.EqualFunc(early, built, func(a, b patternFile) bool { return bytes.Equal(a.body, b.body) }) {
		t.Errorf("no file pending, and the files changed")
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
