package controller

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/liveheap"
)

// Once written, a map the controller no longer holds is not kept by the
// writer: in a burst a pass copies the map the writer reads
// (desired.Memo.CopyGood) and the writer kept the old one until its next
// write, 2 s later, a second map of every Service's settings (issue 29's
// whole-run peak). The writer still knows what the file holds: the same
// map handed again unedited writes nothing, edited it writes, and a new
// map is written only when its contents differ from the last written
// (the digest of its encoding).
func TestGoodWriterKeepsNoMapItWrote(t *testing.T) {
	const n = 40000
	dir := t.TempDir()
	w := newGoodWriter(lastGoodStore{filepath.Join(dir, "last-good.json")}, slog.Default())
	base := liveheap.Now()
	a := make(map[string]*settings.Settings, n)
	for i := range n {
		a[fmt.Sprintf("ns/svc-%05d", i)] = new(settings.Defaults())
	}
	size := liveheap.Now() - base
	w.want(a, false)
	if !w.flush() {
		t.Fatal("the first map was not written")
	}
	b := maps.Clone(a) // a pass while the writer read a: a copy, then its edit
	b["ns/new"] = new(settings.Defaults())
	a = nil
	w.want(b, false)
	if held := liveheap.Now() - base; held > size*3/2 {
		t.Errorf("%.1f MB live with one map of %.1f MB handed: the writer keeps the map it wrote", float64(held)/1e6, float64(size)/1e6)
	}
	steps := []struct {
		name   string
		edit   func()
		edited bool
		writes bool
	}{
		{name: "a new map", writes: true},
		{name: "the same map again", writes: false},
		{name: "the same map edited in place", edit: func() { delete(b, "ns/new") }, edited: true, writes: true},
		{name: "the same map again after the edit", writes: false},
		{name: "a whole pass's new map, the same contents", edit: func() { b = maps.Clone(b) }, writes: false},
		{name: "a whole pass's new map", edit: func() { b = maps.Clone(b); b["ns/other"] = new(settings.Defaults()) }, writes: true},
	}
	for i, s := range steps {
		if s.edit != nil {
			s.edit()
		}
		if i > 0 {
			w.want(b, s.edited)
		}
		if got := w.flush(); got != s.writes {
			t.Errorf("%s: written %v, want %v", s.name, got, s.writes)
		}
	}
	runtime.KeepAlive(b)
	if files, err := os.ReadDir(dir); err != nil || len(files) != 1 {
		t.Errorf("the directory holds %v (%v), want the file alone (no temporary file left)", files, err)
	}
}
