package dataplaneapi

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// The check fields a Service backend gets, as internal/render writes them
// for the local HAProxy: its own check (port and HTTP request included);
// the unbound slots of a following backend carry none (issue 35), but as
// an older release wrote them until a reload is due.
func TestOwnCheckFields(t *testing.T) {
	httpNode := model.Check{Enabled: true, Inter: time.Second, Rise: 2, Fall: 2, Port: 10256, HTTP: model.HTTPCheck{Path: "/healthz"}}
	local := model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 3, Port: 31234, HTTP: model.HTTPCheck{Path: "/"}}
	tcp := model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 3}
	httpchk := map[string]any{"method": "GET", "uri": "/"}
	expect200 := []any{map[string]any{"type": "expect", "match": "status", "pattern": "200"}}
	for _, tc := range []struct {
		name      string
		seed      bool
		check     model.Check
		track     bool
		proxy     bool
		nodeCheck model.Check
		have      Object // the backend as read, in seed mode
		// want: the backend's check fields (absent: nil), and its
		// default_server.
		want   map[string]any
		wantDS map[string]any
		// slots: the check fields of its unbound slots.
		slots map[string]any
		// olderChecked: the backend as read has its unbound slots
		// checked, as releases before issue 35 wrote them; reload: the
		// pass reloads anyway.
		olderChecked, reload bool
	}{
		{name: "healthCheckNodePort (eTP=Local)", check: local,
			want:   map[string]any{"adv_check": "httpchk", "httpchk_params": httpchk, "http_check_list": expect200},
			wantDS: map[string]any{"check": "enabled", "inter": 2000, "rise": 2, "fall": 3, "health_check_port": 31234}},
		{name: "healthCheckNodePort with PROXY v2: no check-send-proxy", check: local, proxy: true,
			want:   map[string]any{"adv_check": "httpchk", "httpchk_params": httpchk, "http_check_list": expect200},
			wantDS: map[string]any{"check": "enabled", "inter": 2000, "rise": 2, "fall": 3, "health_check_port": 31234, "send-proxy-v2": "enabled"}},
		{name: "own port with PROXY v2", check: tcp, proxy: true, nodeCheck: httpNode,
			want:   map[string]any{"adv_check": nil, "httpchk_params": nil, "http_check_list": nil},
			wantDS: map[string]any{"check": "enabled", "inter": 2000, "rise": 2, "fall": 3, "send-proxy-v2": "enabled", "check-send-proxy": "enabled"}},
		{name: "own check beside an HTTP node check", check: local, nodeCheck: httpNode,
			want:   map[string]any{"adv_check": "httpchk", "httpchk_params": httpchk, "http_check_list": expect200},
			wantDS: map[string]any{"check": "enabled", "inter": 2000, "rise": 2, "fall": 3, "health_check_port": 31234}},
		// Issue 35: a check on a free slot costs HAProxy a file descriptor.
		{name: "following: unbound slots carry no check", track: true, nodeCheck: httpNode, reload: true,
			want: map[string]any{"adv_check": nil, "httpchk_params": nil, "http_check_list": nil}, wantDS: nil},
		{name: "following, an older release's checked slots, no reload due: kept", track: true, nodeCheck: httpNode, olderChecked: true,
			want:   map[string]any{"adv_check": "httpchk", "httpchk_params": map[string]any{"method": "GET", "uri": "/healthz"}, "http_check_list": expect200},
			wantDS: nil,
			slots:  map[string]any{"check": "enabled", "inter": 1000, "rise": 2, "fall": 2, "health_check_port": 10256}},
		{name: "following, an older release's checked slots at a reload: dropped", track: true, nodeCheck: httpNode, olderChecked: true, reload: true,
			want: map[string]any{"adv_check": nil, "httpchk_params": nil, "http_check_list": nil}, wantDS: nil},
		{name: "following, not checked, no reload due: none", track: true, nodeCheck: httpNode,
			want: map[string]any{"adv_check": nil, "httpchk_params": nil, "http_check_list": nil}, wantDS: nil},
		{name: "following, no node check", track: true,
			want: map[string]any{"adv_check": nil, "httpchk_params": nil, "http_check_list": nil}, wantDS: nil},
		{name: "seed: tcp-check", seed: true, check: tcp,
			have: Object{"name": "be_ops", "adv_check": "httpchk", "httpchk_params": httpchk, "http_check_list": expect200, "default_server": map[string]any{"maxconn": 50, "health_check_port": 8080}},
			// The http-check rules, which tcp-check does not read, stay.
			want:   map[string]any{"adv_check": "tcp-check", "httpchk_params": nil, "http_check_list": expect200},
			wantDS: map[string]any{"check": "enabled", "inter": 2000, "rise": 2, "fall": 3, "maxconn": 50}},
		{name: "seed: healthCheckNodePort", seed: true, check: local, proxy: true,
			have:   Object{"name": "be_ops", "adv_check": "tcp-check", "default_server": map[string]any{"maxconn": 50}},
			want:   map[string]any{"adv_check": "httpchk", "httpchk_params": httpchk, "http_check_list": expect200},
			wantDS: map[string]any{"check": "enabled", "inter": 2000, "rise": 2, "fall": 3, "health_check_port": 31234, "send-proxy-v2": "enabled", "maxconn": 50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "be_ns_web_80"
			var opts Options
			if tc.seed {
				name, opts.Seed = "be_ops", "be_ops"
			}
			be := &model.Backend{Name: name, Balance: "roundrobin", Check: tc.check, TrackNodes: tc.track, SendProxyV2: tc.proxy,
				Servers: []model.Server{{Addr: netip.MustParseAddr("127.81.14.1"), Port: 30080}}}
			cfg := model.Config{Backends: []*model.Backend{be}}
			if tc.track || tc.nodeCheck.Enabled {
				nodes := &model.Backend{Name: model.NodesBackend, Check: tc.nodeCheck, Servers: []model.Server{{Addr: netip.MustParseAddr("127.81.14.1")}}}
				cfg.Backends = append([]*model.Backend{nodes}, be)
			}
			have := &state{backends: map[string]*section{}, frontends: map[string]*section{}}
			if tc.have != nil {
				have.backends[name] = &section{base: tc.have}
			}
			layout, _ := plan.Assign(cfg, nil, false)
			if tc.olderChecked {
				sec := &section{base: Object{"name": name, "adv_check": "httpchk", "httpchk_params": map[string]any{"method": "GET", "uri": "/healthz"}, "http_check_list": expect200}}
				for i := range layout[name] {
					sec.children = append(sec.children, Object{"name": model.SlotName(i), "address": freeAddr, "port": int64(freePort), "maintenance": "enabled",
						"check": "enabled", "inter": int64(1000), "rise": int64(2), "fall": int64(2), "health_check_port": int64(10256)})
				}
				have.backends[name] = sec
			}
			d := &Driver{opts: opts}
			want, _ := d.target(have, nil, cfg, layout, nil, tc.reload)
			got := want.backends[name]
			for k, v := range tc.want {
				if !same(got.base[k], v) {
					t.Errorf("%s: %v, want %v", k, got.base[k], v)
				}
			}
			if ds := got.base["default_server"]; !same(ds, tc.wantDS) && !(ds == nil && tc.wantDS == nil) {
				t.Errorf("default_server: %v, want %v", ds, tc.wantDS)
			}
			for _, c := range got.children {
				if _, bound := c["track"]; bound {
					continue
				}
				for _, k := range []string{"check", "inter", "rise", "fall", "health_check_port"} {
					if !same(c[k], tc.slots[k]) && !(c[k] == nil && tc.slots[k] == nil) {
						t.Errorf("slot %v: %s %v, want %v", c["name"], k, c[k], tc.slots[k])
					}
				}
			}
		})
	}
}

// A model whose check the driver cannot write as its grammar allows
// (a path HAProxy could read as syntax, a TLS check) is refused before
// anything is written.
func TestOwnCheckRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check model.Check
		ok    bool
	}{
		{"tcp", model.Check{Enabled: true}, true},
		{"http path", model.Check{Enabled: true, Port: 31234, HTTP: model.HTTPCheck{Path: "/ready-z_1.~"}}, true},
		{"a path with a space", model.Check{Enabled: true, HTTP: model.HTTPCheck{Path: "/ HTTP/1.1\r\nhttp-check send"}}, false},
		{"a relative path", model.Check{Enabled: true, HTTP: model.HTTPCheck{Path: "healthz"}}, false},
		{"TLS", model.Check{Enabled: true, HTTP: model.HTTPCheck{Path: "/readyz", SSL: true}}, false},
		{"off, whatever it holds", model.Check{HTTP: model.HTTPCheck{Path: "x y"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, be := range []string{"be_ns_web_80", model.NodesBackend} {
				cfg := model.Config{Backends: []*model.Backend{{Name: be, Check: tc.check}}}
				err := checkable(cfg)
				if (err == nil) != tc.ok {
					t.Errorf("%s: checkable: %v, want ok %v", be, err, tc.ok)
				}
				if err != nil && !strings.Contains(err.Error(), be) {
					t.Errorf("the error does not name the backend: %v", err)
				}
			}
		})
	}
}
