package render

import (
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// HAProxy's HTTP client verifies with the system CA bundle only where the
// Lua file that uses it (auth-url) is loaded; elsewhere it loads none
// (`httpclient.ssl.verify none`, issue 29: the bundle was a fifth of a
// 2.6 start), and the HTTPClientCA rendering writes the older text.
func TestHTTPClientVerify(t *testing.T) {
	const line = "\thttpclient.ssl.verify none\n"
	loaded := httpAccess()
	plain := httpAccess()
	for i := range plain.Frontends[0].HTTP.Actions {
		plain.Frontends[0].HTTP.Actions[i].Access = nil
	}
	model.Shaped(plain.Frontends[0].HTTP)
	o := opts
	o.ACLDir = goldenACLDir
	legacy := o
	legacy.Legacy = HTTPClientCA
	for _, tc := range []struct {
		name string
		cfg  model.Config
		opts Options
		want bool
	}{
		{"Lua loaded: the bundle verifies auth-url's servers", loaded, o, false},
		{"no Lua: no bundle", plain, o, true},
		{"no Lua, the older release's text", plain, legacy, false},
		{"the Services mode's model", model.Config{}, opts, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := string(Config(tc.cfg, nil, tc.opts))
			if got := strings.Contains(text, line); got != tc.want {
				t.Fatalf("%q written: %v, want %v:\n%s", line, got, tc.want, text)
			}
			if got, want := strings.Contains(text, "\tlua-load "), ExtAuthLoaded(tc.cfg, tc.opts); got != want {
				t.Fatalf("lua-load written %v, loaded %v", got, want)
			}
		})
	}
	if StructureHash(plain, nil, o) == StructureHash(plain, nil, legacy) {
		t.Error("the line is not part of the structure hash: an upgraded controller would not know the running text")
	}
}
