package cli

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce/bgp"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce/layer2"
)

func TestAnnounceSetupRefuses(t *testing.T) {
	dir := t.TempDir()
	good, short := filepath.Join(dir, "key"), filepath.Join(dir, "short")
	if err := os.WriteFile(good, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, []byte("tiny"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := announceFlags{mode: announceL2, iface: "hks-no-such-if0", keyFile: good, name: "lb1", listen: "127.0.0.1:0",
		bgp: bgpFlags{holdTime: bgp.DefaultHoldTime, restartTime: bgp.DefaultRestartTime}}
	cases := []struct {
		name   string
		change func(a *announceFlags)
		want   string
		is     error
	}{
		{"another announcer", func(a *announceFlags) { a.mode = "ospf" }, "--announce: want l2, bgp or keepalived", nil},
		{"a flag of bgp", func(a *announceFlags) { a.bgp.asn = 65001 }, "flags of --announce=bgp", nil},
		{"no interface", func(a *announceFlags) { a.iface = "" }, "needs --announce-interface", nil},
		{"no key file", func(a *announceFlags) { a.keyFile = filepath.Join(dir, "none") }, "--announce-key-file", nil},
		{"a short key", func(a *announceFlags) { a.keyFile = short }, "want at least 16", nil},
		{"a bad peer", func(a *announceFlags) { a.peers = []string{"lb2"} }, "--announce-peers", nil},
		{"a bad listen address", func(a *announceFlags) { a.listen = "7947" }, "--announce-listen", nil},
		// looked up only, in the test's own namespace
		{"an interface that does not exist", func(a *announceFlags) {}, "no such interface", layer2.ErrNoInterface},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := base
			tc.change(&a)
			d, err := a.setup(context.Background(), nil, nil, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.want) || tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("%v, want an error with %q", err, tc.want)
			}
			if d != nil {
				t.Fatal("a driver with the error")
			}
		})
	}
	if d, err := (&announceFlags{}).setup(context.Background(), nil, nil, slog.New(slog.DiscardHandler)); d != nil || err != nil {
		t.Fatalf("off: %v %v, want nothing", d, err)
	}
}

func TestParsePeer(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.2": "192.0.2.2:7947", "192.0.2.2:9000": "192.0.2.2:9000",
		"2001:db8::2": "[2001:db8::2]:7947", "[2001:db8::2]:9000": "[2001:db8::2]:9000",
	} {
		got, err := parsePeer(in)
		if err != nil || got.String() != want {
			t.Errorf("%s: %v %v, want %s", in, got, err, want)
		}
	}
}

// TestAnnounceOtherModes: --announce is refused where it would not run.
func TestAnnounceOtherModes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--mode=apiserver", "--announce=l2"}, "--announce is a flag of --mode=services"},
		{[]string{"run", "--mode=gateway", "--announce=l2"}, "--announce: not in --mode=gateway"},
	} {
		// A flag refused in a mode is a usage error: exit 2 and a hint.
		code, _, errb := mainOf(tc.args...)
		if code != 2 || !strings.Contains(errb, tc.want) || !strings.Contains(errb, "--help") {
			t.Errorf("%v: exit %d, stderr %q, want exit 2, %q and a hint", tc.args, code, errb, tc.want)
		}
	}
}
