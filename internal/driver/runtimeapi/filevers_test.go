package runtimeapi

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFileSetKeepsTheBytes: a file is written when its bytes differ from
// those last written, and what is kept of it is the file's own bytes,
// not a copy (a pass's map files are hundreds of kilobytes at thousands
// of routes).
func TestFileSetKeepsTheBytes(t *testing.T) {
	dir := t.TempDir()
	s := &fileSet{kind: "map", unsynced: true}
	path := filepath.Join(dir, "a.map")
	for _, c := range []struct {
		name  string
		body  string
		wrote int
	}{
		{"first", "a 1\nb 2\n", 1},
		{"the same bytes, another slice", "a 1\nb 2\n", 0},
		{"changed", "a 1\n", 1},
		{"empty", "", 1},
	} {
		f := patternFile{path: path, body: []byte(c.body), what: "a map"}
		wrote, err := s.write(dir, []patternFile{f})
		if err != nil {
			t.Fatal(err)
		}
		if len(wrote) != c.wrote {
			t.Errorf("%s: %d files written, want %d", c.name, len(wrote), c.wrote)
		}
		if got, _ := os.ReadFile(path); string(got) != c.body {
			t.Errorf("%s: the file holds %q, want %q", c.name, got, c.body)
		}
		if kept := s.last[path]; c.wrote == 1 && len(kept) > 0 && &kept[0] != &f.body[0] {
			t.Errorf("%s: the bytes last written kept as a copy", c.name)
		}
	}
}
