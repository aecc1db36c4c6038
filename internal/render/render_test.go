package render

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

func ap(s string) netip.Addr { return netip.MustParseAddr(s) }

func sample() model.Config {
	return model.Config{
		Frontends: []model.Frontend{
			{Name: "fe_default_web_80", Binds: []model.Bind{{Port: 18080}}, Backend: "be_default_web_80", TimeoutClient: time.Minute},
			{Name: "fe_prod_db_5432", Binds: []model.Bind{{Addr: ap("127.0.0.1"), Port: 15432}, {Addr: ap("::1"), Port: 15432}},
				AcceptProxy: true, MaxConn: 2000, TimeoutClient: 30 * time.Minute, Backend: "be_prod_db_5432"},
		},
		Backends: []*model.Backend{
			{Name: "be_default_web_80", Balance: "roundrobin", Check: model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 3},
				TimeoutConnect: 5 * time.Second, TimeoutServer: time.Minute,
				Servers: []model.Server{{Addr: ap("10.0.0.1"), Port: 30080}, {Addr: ap("10.0.0.2"), Port: 30080, Drain: true}}},
			{Name: "be_prod_db_5432", Balance: "source", Check: model.Check{Enabled: true, Inter: 500 * time.Millisecond, Rise: 1, Fall: 2},
				SendProxyV2: true, TimeoutConnect: 3 * time.Second, TimeoutServer: time.Hour,
				Servers: []model.Server{{Addr: ap("fd00::5"), Port: 31000}}},
		},
	}
}

// tracked is a config whose backends follow their nodes: node 10.0.0.2
// is down, and 10.0.0.3 joined after the last reload (its server sits in
// a slot that follows no node, in maintenance of its own while its node is
// down).
func tracked() (model.Config, model.Layout) {
	nodes := func(down3 bool) *model.Backend {
		return &model.Backend{Name: model.NodesBackend, Servers: []model.Server{
			{Addr: ap("10.0.0.1")}, {Addr: ap("10.0.0.2"), Maint: true}, {Addr: ap("10.0.0.3"), Maint: down3}}}
	}
	web := func(servers ...model.Server) *model.Backend {
		return &model.Backend{Name: "be_default_web_80", Balance: "roundrobin", TrackNodes: true, Servers: servers}
	}
	cfg := model.Config{
		Frontends: []model.Frontend{{Name: "fe_default_web_80", Binds: []model.Bind{{Port: 18080}}, Backend: "be_default_web_80"}},
		Backends: []*model.Backend{nodes(false), web(
			model.Server{Addr: ap("10.0.0.1"), Port: 30080, Drain: true}, model.Server{Addr: ap("10.0.0.2"), Port: 30080})},
	}
	cfg.Backends[0] = cfg.Backends[0].WithServers(cfg.Backends[0].Servers[:2])
	layout, _ := plan.Assign(cfg, nil, true)
	later := cfg
	later.Backends = []*model.Backend{nodes(true), web(
		model.Server{Addr: ap("10.0.0.1"), Port: 30080, Drain: true}, model.Server{Addr: ap("10.0.0.2"), Port: 30080},
		model.Server{Addr: ap("10.0.0.3"), Port: 30080})}
	next, exhausted := plan.Assign(later, layout, false)
	if len(exhausted) > 0 {
		panic("tracked sample does not fit")
	}
	return later, next
}

// httpChecked is a kube-apiserver load balancer: one frontend, one
// backend whose servers are health-checked with an HTTP request.
func httpChecked(h model.HTTPCheck) model.Config {
	return model.Config{
		Frontends: []model.Frontend{{Name: "apiserver", Binds: []model.Bind{{Port: 6443}}, Backend: "apiserver", TimeoutClient: time.Hour}},
		Backends: []*model.Backend{{Name: "apiserver", Balance: "roundrobin", TimeoutServer: time.Hour,
			Check:   model.Check{Enabled: true, Inter: time.Second, Rise: 2, Fall: 2, HTTP: h},
			Servers: []model.Server{{Addr: ap("192.0.2.1"), Port: 6443}, {Addr: ap("192.0.2.2"), Port: 6443}}}},
	}
}

// withRealFiles replaces the CA and client certificate paths of
// httpChecked configs with files that exist.
func withRealFiles(t *testing.T, cfg []byte) []byte {
	ca, both := testcert.Files(t)
	cfg = bytes.ReplaceAll(cfg, []byte("/etc/kubernetes/pki/ca.crt"), []byte(ca))
	return bytes.ReplaceAll(cfg, []byte("/var/lib/hks/check-client.pem"), []byte(both))
}

var opts = Options{StatsSocket: "/run/hks/admin.sock", StateFile: "/var/lib/hks/server-state", MaxConn: 50000}

// goldenInput is what a golden file of testdata/ is rendered from.
type goldenInput struct {
	cfg    model.Config
	layout model.Layout
	opts   Options
	// own: the file's own test renders it too and runs HAProxy on it
	// with the files it names.
	own bool
}

// goldenInputs are the inputs of every golden file, by file name.
func goldenInputs() map[string]goldenInput {
	layout, _ := plan.Assign(sample(), nil, true)
	in := map[string]goldenInput{
		"empty.cfg":  {model.Config{}, nil, opts, false},
		"sample.cfg": {sample(), layout, opts, false},
	}
	tc, tl := tracked()
	in["tracked.cfg"] = goldenInput{tc, tl, opts, false}
	// The same with the node check (--node-check): HTTP and TCP.
	for name, h := range map[string]model.HTTPCheck{"tracked-nodecheck-http.cfg": {Path: "/healthz"}, "tracked-nodecheck-tcp.cfg": {}} {
		nc := tc
		nc.Backends = slices.Clone(tc.Backends)
		checked := *tc.Backends[0] // a new backend: tc's are shared
		checked.Check = model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 2, Port: 10256, HTTP: h}
		nc.Backends[0] = &checked
		in[name] = goldenInput{nc, tl, opts, false}
	}
	// No node check, and a Service checked every 200ms beside the ones
	// following their nodes: the agent of the _nodes servers runs every
	// second, so that after a reload the fast check's first run is
	// spread over a second, not over the agent's hour
	// (model.Config.NodesAgentInter).
	fc := tc
	fast := &model.Backend{Name: "be_default_fast_80", Balance: "roundrobin",
		Check:   model.Check{Enabled: true, Inter: 200 * time.Millisecond, Rise: 2, Fall: 2},
		Servers: []model.Server{{Addr: ap("10.0.0.1"), Port: 30081}}}
	fc.Backends = slices.Insert(slices.Clone(tc.Backends), 1, fast) // sorted by name
	fl, _ := plan.Assign(model.Config{Backends: []*model.Backend{fast}}, nil, true)
	for name, slots := range tl {
		fl[name] = slots
	}
	in["tracked-fastcheck.cfg"] = goldenInput{fc, fl, opts, false}
	for name, h := range map[string]model.HTTPCheck{
		"httpcheck-verify.cfg":   {Path: "/readyz", SSL: true, CAFile: "/etc/kubernetes/pki/ca.crt", CertFile: "/var/lib/hks/check-client.pem"},
		"httpcheck-noverify.cfg": {Path: "/readyz", SSL: true},
		"httpcheck-plain.cfg":    {Path: "/healthz"},
	} {
		hc := httpChecked(h)
		hl, _ := plan.Assign(hc, nil, true)
		in[name] = goldenInput{hc, hl, opts, false}
	}
	// A Local Service checked on its healthCheckNodePort: the check sends
	// no PROXY header (kube-proxy's health server would not read it).
	lc := httpChecked(model.HTTPCheck{Path: "/"})
	lc.Backends[0].Check.Port, lc.Backends[0].SendProxyV2 = 32100, true
	ll, _ := plan.Assign(lc, nil, true)
	in["localcheck.cfg"] = goldenInput{lc, ll, opts, false}
	stats := opts
	stats.Stats = model.Bind{Addr: ap("127.0.0.1"), Port: 8404}
	in["stats.cfg"] = goldenInput{sample(), layout, stats, false}
	stats.Stats = model.Bind{Port: 8404}
	stats.StatsAuth = StatsAuth{User: "ops", Password: "s3cret-pa55:word"}
	in["stats-auth.cfg"] = goldenInput{sample(), layout, stats, false}
	// ClientIP affinity with the local peer: stick tables kept across
	// reloads.
	aff := sample()
	aff.Backends = slices.Clone(aff.Backends)
	web := *aff.Backends[0]
	web.Affinity = 3 * time.Hour
	aff.Backends[0] = &web
	peers := opts
	peers.Peer = netip.MustParseAddrPort("127.0.0.1:10000")
	in["affinity-peers.cfg"] = goldenInput{aff, layout, peers, false}
	// The inputs of the golden files other tests write, as they render
	// them (TestGolden checks that they agree).
	in["monitor.cfg"] = goldenInput{model.Config{}, nil, Options{StatsSocket: "/run/hks/admin.sock", Monitor: netip.MustParseAddrPort("127.0.0.1:9444")}, true}
	rc := restricted()
	rl, _ := plan.Assign(rc, nil, true)
	withDir := opts
	withDir.ACLDir = goldenACLDir
	in["sourceranges-inline.cfg"] = goldenInput{rc, rl, opts, true}
	in["sourceranges-aclfile.cfg"] = goldenInput{rc, rl, withDir, true}
	pc := sample()
	pc.Frontends[0].Binds = []model.Bind{{Addr: ap("198.18.0.10"), Port: 443, Transparent: true}, {Addr: ap("2001:db8::10"), Port: 443, Transparent: true}}
	pc.Frontends[1].Binds = []model.Bind{{Addr: ap("198.18.0.11"), Port: 5432, Transparent: true}}
	pl, _ := plan.Assign(pc, nil, true)
	in["pooled.cfg"] = goldenInput{pc, pl, opts, true}
	gc := routed()
	gl, _ := plan.Assign(gc, nil, true)
	in["routes.cfg"] = goldenInput{gc, gl, opts, true}
	in["routes-maps.cfg"] = goldenInput{gc, gl, withDir, true}
	return in
}

func TestGolden(t *testing.T) {
	cases, own := map[string][]byte{}, map[string]bool{}
	for name, in := range goldenInputs() {
		cases[name], own[name] = Config(in.cfg, in.layout, in.opts), in.own
	}
	if got := ScanPeer(bytes.NewReader(cases["affinity-peers.cfg"])); got != netip.MustParseAddrPort("127.0.0.1:10000") {
		t.Errorf("ScanPeer = %v, want 127.0.0.1:10000", got)
	}
	for name, got := range cases {
		t.Run(name, func(t *testing.T) {
			golden.Assert(t, name, got)
			if own[name] {
				return
			}
			// The real HAProxy must accept what we render; it reads the
			// files a config names, so those are made for real.
			golden.HAProxyAccepts(t, withRealFiles(t, got))
		})
	}
}

func TestStructureHash(t *testing.T) {
	cfg := sample()
	layout, _ := plan.Assign(cfg, nil, true)
	h := StructureHash(cfg, layout, opts)

	// Moving servers between slots or draining is not structure.
	moved := sample()
	moved.Backends[0].Servers = []model.Server{{Addr: ap("10.0.0.9"), Port: 30080}}
	ml, _ := plan.Assign(moved, layout, false)
	if got := StructureHash(moved, ml, opts); got != h {
		t.Errorf("server change altered the structure hash")
	}
	// Settings and slot counts are structure.
	changed := sample()
	changed.Backends[0].Balance = "leastconn"
	if StructureHash(changed, layout, opts) == h {
		t.Errorf("balance change kept the structure hash")
	}
	bigger, _ := plan.Assign(cfg, nil, true)
	bigger["be_default_web_80"] = append(bigger["be_default_web_80"], model.Slot{})
	if StructureHash(cfg, bigger, opts) == h {
		t.Errorf("slot count change kept the structure hash")
	}
	if !strings.Contains(string(Config(cfg, layout, opts)), "description "+DescriptionPrefix+h+"\n") {
		t.Errorf("config does not carry its structure hash")
	}
}

func TestStatsAuthValidate(t *testing.T) {
	for _, tc := range []struct {
		user, password string
		ok             bool
	}{
		{"ops", "s3cret-pa55:word", true},
		{"ops.team_1", "([{<!%&*+,./:;=>?@^_|~-}]>)", true},
		{"", "s3cret-pa55", false},
		{"ops:x", "s3cret-pa55", false},
		{"ops", "short", false},
		{"ops", "with space", false},
		{"ops", "hash#comment", false},
		{"ops", "dollar${HOME}", false},
		{"ops", `quote"d-password`, false},
		{"ops", `back\slash-password`, false},
		{"ops", "line\nbreak-password", false},
		{"ops", "tab\tseparated-password", false},
	} {
		err := StatsAuth{tc.user, tc.password}.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("Validate(%q, %q) = %v, want ok %v", tc.user, tc.password, err, tc.ok)
		}
		if err != nil && strings.Contains(err.Error(), tc.password) && tc.password != "" {
			t.Errorf("error %q contains the password", err)
		}
	}
}
