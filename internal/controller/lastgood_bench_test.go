package controller

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// BenchmarkLastGoodSave: the last good settings of 10,000 Services
// encoded and written (synced) whole, as each pass that adds a Service
// does: once on the pass's path, now by the controller's writer after the
// driver applied (goodwriter.go).
//
//	go test ./internal/controller -run '^$' -bench LastGoodSave -benchtime 10x -count 3
func BenchmarkLastGoodSave(b *testing.B) {
	s := lastGoodStore{path: filepath.Join(b.TempDir(), "last-good.json")}
	m := map[string]*settings.Settings{}
	for i := range 10000 {
		m[fmt.Sprintf("default/svc-%05d", i)] = new(settings.Defaults())
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.save(nil, m); err != nil {
			b.Fatal(err)
		}
	}
}
