package haproxy

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

func TestDynamicBackendsByVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    bool
	}{
		{"2.6.12-1+deb12u4", false},
		{"3.0.11-1+deb13u4", false},
		{"3.2.26-1", false},
		{"3.3.1", false},
		{"3.4.7-1", true},
		{"3.5-dev5", true},
		{"4.0.0", true},
	} {
		v, err := ParseVersion(tc.version)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.DynamicBackends(); got != tc.want {
			t.Errorf("%s: DynamicBackends %v, want %v", tc.version, got, tc.want)
		}
	}
	if (Version{}).DynamicBackends() {
		t.Error("an unknown version adds backends at runtime")
	}
}

func TestNewBackendCommands(t *testing.T) {
	b := NewBackend{Name: "be_default_web_80", Defaults: "class_0", Servers: []NewServer{
		{Name: "s1", Addr: netip.MustParseAddrPort("10.0.0.1:30080"), Options: []string{"check", "inter", "2s"}},
		{Name: "s2", Addr: netip.MustParseAddrPort("127.0.0.1:1"), Disabled: true},
	}}
	want := []string{
		"experimental-mode on",
		"add backend be_default_web_80 from class_0",
		"add server be_default_web_80/s1 10.0.0.1:30080 check inter 2s",
		"enable health be_default_web_80/s1",
		"enable server be_default_web_80/s1",
		"add server be_default_web_80/s2 127.0.0.1:1",
		"publish backend be_default_web_80",
	}
	if got := b.Commands(); !slices.Equal(got, want) {
		t.Errorf("commands\n%q\nwant\n%q", got, want)
	}
}

// A backend added at runtime serves through a frontend's map-driven
// use_backend rule with no reload on 3.4+ (the worker that served before
// serves after); older workers refuse `add backend` and the backend never
// serves. Each version's verdict, on the binary the tests run.
func TestAddBackendServesWithoutReload(t *testing.T) {
	dir := t.TempDir()
	fePort := haproxytest.FreePort(t)
	mapFile := filepath.Join(dir, "be.map")
	if err := os.WriteFile(mapFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := haproxytest.MinimalConfig(dir) + fmt.Sprintf(`
defaults class_0
    mode tcp
    balance roundrobin
    timeout connect 2s
    timeout client 30s
    timeout server 30s

frontend fe
    bind 127.0.0.1:%d
    tcp-request content set-var(sess.key) str(svc)
    use_backend %%[var(sess.key),map_str(%s)]
    default_backend _reject

backend _reject
    server s1 127.0.0.1:1 disabled
`, fePort, mapFile)
	l := startConfig(t, dir, cfg, fePort)
	rt := l.rt
	ctx := testCtx(t)
	v := l.version(t)
	info, err := rt.ShowInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := info["Pid"]

	if _, err := l.dialFrontend(); err == nil {
		t.Fatal("the frontend serves before any backend was added")
	}
	port := greeter(t, "hello")
	b := NewBackend{Name: "be_new", Defaults: "class_0", Servers: []NewServer{
		{Name: "s1", Addr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))},
		{Name: "s2", Addr: netip.MustParseAddrPort("127.0.0.1:1"), Disabled: true},
	}}
	err = rt.AddBackend(ctx, b)
	if !v.DynamicBackends() {
		if !errors.Is(err, ErrCommand) {
			t.Fatalf("HAProxy %s: add backend: %v, want a refusal (ErrCommand)", v, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("HAProxy %s: %v", v, err)
	}
	if _, err := rt.ExecChecked(ctx, []string{"add map " + mapFile + " svc be_new"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the added backend serves", func() error {
		got, err := l.dialFrontend()
		if err == nil && got != "hello" {
			return fmt.Errorf("got %q", got)
		}
		return err
	})
	states, err := rt.ShowServersState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var slots []string
	for _, s := range states {
		if s.Backend == "be_new" {
			slots = append(slots, fmt.Sprintf("%s:%d", s.Server, s.AdminState&0x01))
		}
	}
	slices.Sort(slots) // 3.4.7 lists added servers newest first
	if !slices.Equal(slots, []string{"s1:0", "s2:1"}) {
		t.Errorf("be_new's slots (name:forced maintenance) %v, want [s1:0 s2:1]", slots)
	}
	if again, err := rt.ShowInfo(ctx); err != nil || again["Pid"] != pid {
		t.Errorf("the worker changed (pid %s, was %s; %v): a reload, not a runtime change", again["Pid"], pid, err)
	}
	// The same name again is refused, the running one untouched.
	if err := rt.AddBackend(ctx, b); !errors.Is(err, ErrCommand) {
		t.Errorf("adding be_new twice: %v, want ErrCommand", err)
	}
}
