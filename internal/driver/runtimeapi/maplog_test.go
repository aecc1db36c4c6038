package runtimeapi

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// TestLogMapEditsSaysWhatChanged: the line a pass logs tells routes from
// listened addresses by what the files are (a fixed listener's map:
// mapFile), not by their names in the log: the HTTP listener's map,
// whose name does not start with "listener", is a listened address too.
func TestLogMapEditsSaysWhatChanged(t *testing.T) {
	entries := []render.MapEntry{{Key: "10.0.0.1:80", Value: "1"}}
	route := patternFile{path: "/acl/routes.map", body: []byte("a b\n"), lines: []string{"a b"}, what: "route map"}
	for _, c := range []struct {
		name  string
		files []patternFile
		want  string
	}{
		{"route", []patternFile{route}, "msg=\"routes changed without reload\""},
		{"listener", []patternFile{mapFile("/acl/listener.map", entries, "listener map")}, "msg=\"listened addresses or ports changed without reload\""},
		{"HTTP listener", []patternFile{mapFile("/acl/http-listener.map", entries, "HTTP listener map")}, "msg=\"listened addresses or ports changed without reload\""},
		{"both", []patternFile{route, mapFile("/acl/http-listener.map", entries, "HTTP listener map")}, "msg=\"routes and listened addresses or ports changed without reload\""},
	} {
		d := &HAProxy{}
		d.held.read = map[string]bool{}
		for _, f := range c.files {
			d.held.read[f.path] = true // the worker reads them, holds nothing known
		}
		edits, _ := d.mapEdits(c.files)
		if len(edits) != len(c.files) {
			t.Fatalf("%s: %d edits for %d files", c.name, len(edits), len(c.files))
		}
		var out bytes.Buffer
		logMapEdits(slog.New(slog.NewTextHandler(&out, nil)), edits)
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("%s: logged %q, want %s", c.name, out.String(), c.want)
		}
	}
}
