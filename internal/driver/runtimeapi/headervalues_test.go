package runtimeapi

import (
	"context"
	"maps"
	"net/http"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

func TestCLIValue(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain", "plain"},
		{"max-age=31536000; includeSubDomains", `max-age=31536000\;\ includeSubDomains`},
		{"default-src 'self'", `default-src\ 'self'`},
		{"a  b;;", `a\ \ b\;\;`},
		{`"q"`, `"q"`},
		{"", ""},
	} {
		if got := CLIValue(c.in); got != c.want {
			t.Errorf("CLIValue(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := cliMapLine("a0.rs.x-csp default-src 'self'; img-src *"); got != `a0.rs.x-csp default-src\ 'self'\;\ img-src\ *` {
		t.Errorf("cliMapLine = %q", got)
	}
}

// TestHeaderValuesWithSpaces: response header values holding spaces,
// ';' and quotes reach the client exactly as given, read by HAProxy from
// the map file at the reload, then through the Runtime API: a value
// changed and a new action's (`add map`: a value is part of its
// action's id) and every map replaced whole (`add map @V`), with no
// reload.
func TestHeaderValuesWithSpaces(t *testing.T) {
	l := startMapLab(t)
	d := l.d
	ctx := context.Background()
	a := extBackend(t, "A")
	addr, cfgOf := twoBackends(t, a, a)
	table := func(values ...string) *model.HTTP {
		h := &model.HTTP{Port: 80, Hosts: []model.HTTPHost{{Name: model.AnyHost}}}
		for i, v := range values {
			h.Hosts[0].Rules = append(h.Hosts[0].Rules, model.HTTPRule{PathType: model.PathPrefix, Path: "/" + string(rune('a'+i)), Action: i})
			h.Actions = append(h.Actions, model.HTTPAction{Backends: one("gwh_a"),
				Ext: &model.HTTPActionExt{Response: model.HeaderMods{Set: []model.HeaderValue{{Name: "x-set", Value: v}}}}})
		}
		return model.Shaped(h)
	}
	check := func(step string, values ...string) {
		t.Helper()
		for i, v := range values {
			resp := hostDo(t, http.MethodGet, addr, "/"+string(rune('a'+i)))
			resp.Body.Close()
			if got := resp.Header.Values("X-Set"); len(got) != 1 || got[0] != v {
				t.Errorf("%s: /%c: X-Set %q, want %q", step, 'a'+i, got, v)
			}
		}
	}
	first := []string{"max-age=31536000; includeSubDomains", "default-src 'self'"}
	if _, err := d.Apply(ctx, cfgOf(table(first...))); err != nil {
		t.Fatal(err)
	}
	check("from the file", first...)
	reloads := l.reloads(ctx, t)
	second := []string{"max-age=1;  preload", `a "quoted" one; and ';'`, "new action's; value"}
	if _, err := d.Apply(ctx, cfgOf(table(second...))); err != nil {
		t.Fatal(err)
	}
	check("set and added", second...)
	headers := render.HTTPMapFile(d.opts.Render.ACLDir, "gw_apps_gw_80", render.HTTPHeaders)
	if got, want := showMap(ctx, t, d, headers), fileMap(t, headers); !maps.Equal(got, want) {
		t.Errorf("HAProxy's headers map %q is not its file's %q", got, want)
	}
	// Running entries unknown (as after a failed pass): the maps are
	// replaced whole (`prepare map`, `add map @V`, `commit map`).
	d.held.forget()
	third := []string{"a; b", "c d", "e;f g"}
	res, err := d.Apply(ctx, cfgOf(table(third...)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops < 6 {
		t.Errorf("unknown maps: %d commands, want every map replaced whole", res.Ops)
	}
	check("replaced whole", third...)
	if got, want := showMap(ctx, t, d, headers), fileMap(t, headers); !maps.Equal(got, want) {
		t.Errorf("after the whole replace HAProxy's headers map %q is not its file's %q", got, want)
	}
	if got := l.reloads(ctx, t); got != reloads {
		t.Errorf("%d reloads for changed values, want 0", got-reloads)
	}
}

// cliWords splits a Runtime API request line as HAProxy does (seen on
// 2.6, 3.0 and 3.4, TestHeaderValuesWithSpaces): commands at a ';',
// words at spaces, each unless escaped with a backslash, which is
// dropped.
func cliWords(line string) [][]string {
	var cmds [][]string
	var words []string
	var w []byte
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, string(w))
		}
		w, inWord = w[:0], false
	}
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\\' && i+1 < len(line):
			i++
			w, inWord = append(w, line[i]), true
		case c == ' ' || c == '\t':
			endWord()
		case c == ';':
			endWord()
			cmds, words = append(cmds, words), nil
		default:
			w, inWord = append(w, c), true
		}
	}
	endWord()
	return append(cmds, words)
}

// FuzzCLIValue: every value a header may be set to is one word of one
// command once escaped, read back exactly, also joined with other
// commands on one line.
func FuzzCLIValue(f *testing.F) {
	for _, s := range []string{"max-age=31536000; includeSubDomains", "default-src 'self'", `a "b"`, "a  ;; b", ";", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if v == "" || !model.ValidHeaderSetValue(v) {
			return
		}
		cmd := "set map /m a0.rs.x " + CLIValue(v)
		got := cliWords(cmd + ";show info")
		if len(got) != 2 || len(got[0]) != 5 || got[0][4] != v || len(got[1]) != 2 {
			t.Fatalf("%q escaped as %q: read %q", v, CLIValue(v), got)
		}
		if k, rest := cliMapLine("a0.rs.x "+v), "a0.rs.x "+CLIValue(v); k != rest {
			t.Fatalf("cliMapLine: %q, want %q", k, rest)
		}
	})
}
