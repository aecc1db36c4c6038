package apiserverlb

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

func defaults() CheckOptions {
	return CheckOptions{Inter: DefaultInter, Rise: DefaultRise, Fall: DefaultFall, CAFile: "/etc/kubernetes/pki/ca.crt"}
}

func TestNewShape(t *testing.T) {
	with := func(f func(*CheckOptions)) CheckOptions { c := defaults(); f(&c); return c }
	for _, c := range []struct {
		name   string
		listen []string
		check  CheckOptions
		err    string
	}{
		{name: "defaults", listen: []string{":6443"}, check: defaults()},
		{name: "address and port", listen: []string{"192.0.2.100:8443", "[2001:db8::1]:8443"}, check: defaults()},
		{name: "insecure", listen: []string{":6443"}, check: with(func(c *CheckOptions) { c.CAFile, c.InsecureSkipVerify = "", true })},
		{name: "no CA and not insecure: TCP check", listen: []string{":6443"}, check: with(func(c *CheckOptions) { c.CAFile = "" })},
		{name: "client certificate without CA", listen: []string{":6443"}, check: with(func(c *CheckOptions) { c.CAFile, c.ClientCertPEM = "", "/x.pem" }), err: "needs the CA file"},
		{name: "CA and insecure", listen: []string{":6443"}, check: with(func(c *CheckOptions) { c.InsecureSkipVerify = true }), err: "exclude each other"},
		{name: "CA path injection", listen: []string{":6443"}, check: with(func(c *CheckOptions) { c.CAFile = "/ca.crt verify none" }), err: "CA file"},
		{name: "relative CA", listen: []string{":6443"}, check: with(func(c *CheckOptions) { c.CAFile = "ca.crt" }), err: "CA file"},
		{name: "cert path injection", listen: []string{":6443"}, check: with(func(c *CheckOptions) { c.ClientCertPEM = "/x.pem\n\tserver" }), err: "client certificate"},
		{name: "inter too short", listen: []string{":6443"}, check: with(func(c *CheckOptions) { c.Inter = time.Millisecond }), err: "interval"},
		{name: "fall 0", listen: []string{":6443"}, check: with(func(c *CheckOptions) { c.Fall = 0 }), err: "fall"},
		{name: "no listen", check: defaults(), err: "--listen"},
		{name: "listen without port", listen: []string{"192.0.2.1"}, check: defaults(), err: "--listen"},
		{name: "listen port 0", listen: []string{":0"}, check: defaults(), err: "--listen"},
		{name: "listen injection", listen: []string{":6443 ssl crt /x"}, check: defaults(), err: "--listen"},
		{name: "checks off", listen: []string{":6443"}, check: CheckOptions{Disabled: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewShape(c.listen, c.check)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("got %v, want an ErrInvalid containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Listen) != len(c.listen) || s.Check.Enabled == c.check.Disabled {
				t.Fatalf("shape %+v", s)
			}
			// /readyz over TLS exactly when there is a CA or leave to skip verification.
			if want := c.check.CAFile != "" || c.check.InsecureSkipVerify; (s.Check.HTTP.Path == ReadyzPath && s.Check.HTTP.SSL) != want {
				t.Fatalf("HTTP check %+v, want one: %v", s.Check.HTTP, want)
			}
		})
	}
}

// The rendered configuration of this mode: golden files, accepted by the
// real HAProxy (with real certificate files in place of the paths).
func TestGoldenConfig(t *testing.T) {
	servers := aps("192.0.2.1:6443", "192.0.2.2:6443", "192.0.2.3:6443")
	opts := render.Options{StatsSocket: "/run/haproxy-k8s-sync/admin.sock", StateFile: "/var/lib/haproxy-k8s-sync/server-state"}
	verify := defaults()
	verify.ClientCertPEM = "/var/lib/haproxy-k8s-sync/apiserver-check-client.pem"
	for name, c := range map[string]struct {
		listen []string
		check  CheckOptions
	}{
		"verify.cfg":   {[]string{":6443"}, verify},
		"insecure.cfg": {[]string{"192.0.2.100:8443"}, CheckOptions{Inter: 2 * time.Second, Rise: 3, Fall: 1, InsecureSkipVerify: true}},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := NewShape(c.listen, c.check)
			if err != nil {
				t.Fatal(err)
			}
			cfg := s.Config(servers)
			layout, _ := plan.Assign(cfg, nil, true)
			got := render.Config(cfg, layout, opts)
			golden.Assert(t, name, got)
			ca, both := testcert.Files(t)
			got = bytes.ReplaceAll(got, []byte(verify.CAFile), []byte(ca))
			golden.HAProxyAccepts(t, bytes.ReplaceAll(got, []byte(verify.ClientCertPEM), []byte(both)))
		})
	}
}

func TestConfigServers(t *testing.T) {
	s, err := NewShape([]string{":6443"}, defaults())
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.Config(aps("192.0.2.1:6443", "[2001:db8::1]:7443"))
	if len(cfg.Frontends) != 1 || len(cfg.Backends) != 1 || cfg.Frontends[0].Backend != cfg.Backends[0].Name {
		t.Fatalf("want one frontend using one backend: %+v", cfg)
	}
	want := []model.Server{{Addr: aps("192.0.2.1:1")[0].Addr(), Port: 6443}, {Addr: aps("[2001:db8::1]:1")[0].Addr(), Port: 7443}}
	if got := cfg.Backends[0].Servers; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("servers %v, want %v", got, want)
	}
}
