package runtimeapi

import (
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// TestDiffMap: the edit from the entries a worker holds to a file's
// lines, one command per key that differs.
func TestDiffMap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		held  map[string]string // nil: unknown
		lines []string
		want  []string // mapCommands of the one edit, "@V" for the version
	}{
		{name: "unknown: whole", held: nil, lines: []string{"a 1", "b 2"},
			want: []string{"add map @V f a 1", "add map @V f b 2", "commit map @V f"}},
		{name: "unknown and empty: whole, emptied", held: nil, lines: nil,
			want: []string{"commit map @V f"}},
		{name: "same", held: map[string]string{"a": "1", "b": "2"}, lines: []string{"b 2", "a 1"}},
		{name: "key added", held: map[string]string{"a": "1"}, lines: []string{"a 1", "b 2"},
			want: []string{"add map f b 2"}},
		{name: "value changed", held: map[string]string{"a": "1", "b": "2"}, lines: []string{"a 1", "b 3"},
			want: []string{"set map f b 3"}},
		{name: "key gone", held: map[string]string{"a": "1", "b": "2"}, lines: []string{"b 2"},
			want: []string{"del map f a"}},
		{name: "emptied: whole, as cheap and atomic", held: map[string]string{"a": "1", "b": "2"}, lines: nil,
			want: []string{"commit map @V f"}},
		{name: "every key changed: whole", held: map[string]string{"0:4999": "a", "5000:9999": "b"}, lines: []string{"0:6999 a", "7000:9999 b"},
			want: []string{"add map @V f 0:6999 a", "add map @V f 7000:9999 b", "commit map @V f"}},
		{name: "most keys gone", held: map[string]string{"a": "1", "b": "2", "c": "3"}, lines: []string{"c 3"},
			want: []string{"del map f a", "del map f b"}},
		{name: "from empty", held: map[string]string{}, lines: []string{"a 1"},
			want: []string{"add map f a 1"}},
		{name: "path moved: add before del", held: map[string]string{"h0/a": "p0", "h0/": "p1"}, lines: []string{"h0/b p0", "h0/ p1"},
			want: []string{"add map f h0/b p0", "del map f h0/a"}},
		{name: "sets, adds in file order, then dels sorted",
			held:  map[string]string{"z": "1", "y": "1", "c": "1", "d": "1", "e": "1", "f": "1", "g": "1"},
			lines: []string{"d 2", "b 1", "c 2", "a 1", "e 1", "f 1", "g 1"},
			want:  []string{"set map f d 2", "set map f c 2", "add map f b 1", "add map f a 1", "del map f y", "del map f z"}},
		{name: "repeated key: whole", held: map[string]string{"a": "1"}, lines: []string{"a 1", "a 2"},
			want: []string{"add map @V f a 1", "add map @V f a 2", "commit map @V f"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := diffMap("f", tc.held, tc.lines)
			var got []string
			if !e.empty() {
				got = mapCommands([]mapEdit{e}, map[string]string{"f": "V"})
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("commands:\n got %q\nwant %q", got, tc.want)
			}
			if n := e.count(); !e.empty() && e.whole && n != len(tc.want)+1 {
				t.Errorf("count %d, want %d (with the prepare)", n, len(tc.want)+1)
			}
		})
	}
}

// TestMapCommandsOrder: across the files of one pass, every set and add
// comes first, file by file in the given order (targets first), then
// every delete, the last file's first; a whole replace commits at its
// place among the adds. So a map never names an entry of another that
// is not there: a new action is in before a rule names it, a rule gone
// is out before its action goes.
func TestMapCommandsOrder(t *testing.T) {
	backends := diffMap("backends", map[string]string{"a0:1": "web", "a1:1": "old"}, []string{"a0:1 web", "a2:1 new"})
	match := diffMap("match", map[string]string{"p0||": "000000:a1"}, []string{"p0|| 000000:a2"})
	whole := diffMap("exact", nil, []string{"h0/x p0"})
	hosts := diffMap("hosts", map[string]string{"a.example": "h0", "gone.example": "h1"}, []string{"a.example h0", "b.example h0"})
	got := mapCommands([]mapEdit{backends, match, whole, hosts}, map[string]string{"exact": "3"})
	want := []string{
		"add map backends a2:1 new",
		"set map match p0|| 000000:a2",
		"add map @3 exact h0/x p0",
		"commit map @3 exact",
		"add map hosts b.example h0",
		"del map hosts gone.example",
		"del map backends a1:1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("commands:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

// TestListenerMapsOrder: the PROXY map comes before the listener map, so
// a new key's PROXY flag is in before the listener accepts it, and a key
// gone is refused before its flag goes; the routed listeners' backends
// map before their routes map and the server-name map, whose ids point
// into it; the server-name map before the TLS keys map, whose keys wait
// for a name there.
func TestListenerMapsOrder(t *testing.T) {
	d := &HAProxy{opts: Options{Render: render.Options{ACLDir: "/acl", Listeners: render.Listeners{Mode: render.ListenersTProxy}}}}
	files := d.listenerMapFiles(model.Config{}, nil)
	var paths []string
	for _, f := range files {
		paths = append(paths, f.path)
	}
	want := []string{"/acl/proxy.map", "/acl/listeners.backends.map", "/acl/listeners.sni.map", "/acl/listeners.tls.map",
		"/acl/listeners.routes.map", "/acl/listeners.map"}
	if !slices.Equal(paths, want) {
		t.Fatalf("listener map files %v, want %v", paths, want)
	}
}
