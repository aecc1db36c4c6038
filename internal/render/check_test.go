package render

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The slots of a following backend bound to no node carry no check
// (HAProxy would reserve a file descriptor for each: fds.go); in the
// LooseChecked rendering of older releases they carry the node check on
// their own address. Bound slots follow, and nothing else changes.
func TestLooseSlots(t *testing.T) {
	tc, tl := tracked() // s1, s2 bound; s3 holds node 10.0.0.3, unbound; s4 free
	httpCheck := model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 3, Port: 10256, HTTP: model.HTTPCheck{Path: "/healthz"}}
	const loose = " check inter 2s rise 2 fall 3 port 10256"
	bound := []string{"server s1 10.0.0.1:30080 track _nodes/s1 # drain", "server s2 10.0.0.2:30080 track _nodes/s2"}
	unchecked := append(slices.Clip(bound), "server s3 10.0.0.3:30080 disabled", "server s4 127.0.0.1:1 disabled")
	checked := append(slices.Clip(bound), "server s3 10.0.0.3:30080 disabled"+loose, "server s4 127.0.0.1:1 disabled"+loose)
	for _, c := range []struct {
		name      string
		legacy    Legacy
		nodeCheck model.Check // of the NodesBackend
		follow    bool        // the Service backend has TrackNodes
		proxy     bool        // and SendProxyV2
		want      []string    // its server lines, then whether it has option httpchk
		httpchk   bool
	}{
		{"http node check", 0, httpCheck, true, false, unchecked, false},
		{"tcp node check", 0, model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 3, Port: 10256}, true, false, unchecked, false},
		{"PROXY protocol", 0, httpCheck, true, true, unchecked, false},
		{"older: http node check", LooseChecked, httpCheck, true, false, checked, true},
		{"older: tcp node check", LooseChecked, model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 3, Port: 10256}, true, false, checked, false},
		{"older: PROXY protocol: the check on the node check's port sends no header", LooseChecked, httpCheck, true, true, checked, true},
		{"no node check: followers inherit maintenance only", LooseChecked, model.Check{}, true, false, unchecked, false},
		{"a backend that does not follow", LooseChecked, httpCheck, false, false, unchecked, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tc
			cfg.Backends = slices.Clone(tc.Backends)
			nodes, web := *tc.Backends[0], *tc.Backends[1]
			nodes.Check, web.TrackNodes, web.SendProxyV2 = c.nodeCheck, c.follow, c.proxy
			cfg.Backends[0], cfg.Backends[1] = &nodes, &web
			var servers []string
			httpchk := false
			section := ""
			o := opts
			o.Legacy = c.legacy
			for _, line := range strings.Split(string(Config(cfg, tl, o)), "\n") {
				line = strings.TrimSpace(line)
				if name, ok := strings.CutPrefix(line, "backend "); ok {
					section = name
				}
				if section != web.Name {
					continue
				}
				if strings.HasPrefix(line, "server ") {
					servers = append(servers, line)
				}
				if line == "option httpchk GET /healthz" {
					httpchk = true
				}
				if strings.Contains(line, "check-send-proxy") {
					t.Errorf("%q: a check of the node check's port must not send a PROXY header", line)
				}
			}
			if !slices.Equal(servers, c.want) {
				t.Errorf("servers:\n%s\nwant:\n%s", strings.Join(servers, "\n"), strings.Join(c.want, "\n"))
			}
			if httpchk != c.httpchk {
				t.Errorf("option httpchk: %v, want %v", httpchk, c.httpchk)
			}
		})
	}
}
