package render

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// TestConnectPerRequest: with Options.ConnectPerRequest (HAProxy 3.4+)
// an action's connect timeout is an entry "aK.c" of the timeouts map,
// the frontend looks it up and every HTTP backend, static or written
// from a class's defaults, sets it for the request; without the option
// neither rule is written (2.6 to 3.3 refuse `set-timeout connect`),
// and a connect timeout changed is map data either way. The HAProxy of
// the tests accepts the configuration when its version has the
// keyword, and refuses it when not.
func TestConnectPerRequest(t *testing.T) {
	const frontendRule = "http-request set-var(txn.ctmo) var(txn.act),concat(.c),map_str_int("
	const backendRule = "http-request set-timeout connect var(txn.ctmo) if { var(txn.ctmo) -m found }"
	cfg := httpExt()
	cfg.Frontends[0].HTTP.Actions[1].Ext.Connect = 1500 * time.Millisecond
	layout, _ := plan.Assign(cfg, nil, true)
	http := 0
	for _, be := range cfg.Backends {
		if be.HTTP {
			http++
		}
	}
	for _, tc := range []struct {
		name           string
		connect, dyn   bool
		front, backend int
	}{
		{"2.6-3.3", false, false, 0, 0},
		{"3.4-static", true, false, 1, http},
		{"3.4-classes", true, true, 1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			o.ACLDir, o.ConnectPerRequest, o.DynamicBackends = goldenACLDir, tc.connect, tc.dyn
			got := string(Config(cfg, layout, o))
			if n := strings.Count(got, frontendRule); n != tc.front {
				t.Errorf("%d frontend rules looking the connect timeout up, want %d", n, tc.front)
			}
			n := strings.Count(got, backendRule)
			if tc.backend >= 0 && n != tc.backend {
				t.Errorf("%d backend rules setting it, want %d (one per HTTP backend)", n, tc.backend)
			}
			if tc.backend < 0 && (n == 0 || !strings.Contains(got, "defaults "+DynamicPrefix)) {
				t.Errorf("%d backend rules, want the classes' defaults to carry it", n)
			}
			changed := httpExt()
			changed.Frontends[0].HTTP.Actions[1].Ext.Connect = 9 * time.Second
			l2, _ := plan.Assign(changed, nil, true)
			if StructureHash(changed, l2, o) != StructureHash(cfg, layout, o) {
				t.Errorf("a connect timeout changed changed the structure")
			}
			checkConnectKeyword(t, []byte(got), tc.connect)
		})
	}
	es := HTTPMaps(cfg.Frontends[0].HTTP)[HTTPTimeouts]
	if len(es) != 2 || es[1].Key != es[0].Key+".c" || es[0].Value != "500" || es[1].Value != "1500" {
		t.Errorf("timeouts map %v, want the action's server timeout (500) and its connect timeout (1500) under KEY.c", es)
	}
}

// checkConnectKeyword runs `haproxy -c` on cfg (its maps written empty):
// accepted, unless it sets a connect timeout per request and the test
// HAProxy is older than 3.4, which must refuse it.
func checkConnectKeyword(t *testing.T, cfg []byte, connect bool) {
	t.Helper()
	b, err := haproxy.Inspect(context.Background(), haproxytest.Bin())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, kind := range HTTPMapKinds {
		if err := os.WriteFile(HTTPMapFile(dir, httpExt().Frontends[0].Name, kind), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, bytes.ReplaceAll(cfg, []byte(goldenACLDir), []byte(dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(haproxytest.Bin(), "-c", "-q", "-f", path).CombinedOutput()
	want := !connect || b.Version.ConnectPerRequest()
	if (err == nil) != want {
		t.Errorf("haproxy %s -c: accepted %v, want %v: %v\n%s", b.Version, err == nil, want, err, out)
	}
}
