package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// badInputNodes are two nodes every case of these tests serves from.
const badInputNodes = `
- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {addresses: [{type: InternalIP, address: 192.168.1.11}], conditions: [{type: Ready, status: "True"}]}}
- {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {addresses: [{type: InternalIP, address: 192.168.1.12}], conditions: [{type: Ready, status: "True"}]}}
`

// nodePortService is a NodePort Service we take, as a List item; name and
// namespace are JSON strings (any bytes), port and nodePort numbers.
func nodePortService(ns, name, proto string, port, nodePort int) string {
	return fmt.Sprintf(`
- apiVersion: v1
  kind: Service
  metadata: {name: %q, namespace: %q, creationTimestamp: "2026-01-01T00:00:00Z", annotations: {haproxy-k8s-sync.io/enabled: "true"}}
  spec: {type: NodePort, ports: [{name: p, port: %d, nodePort: %d, protocol: %s}]}
`, name, ns, port, nodePort, proto)
}

// renderBoth renders the objects of yaml (with a good TCP and a good UDP
// Service and the two nodes) as haproxy.cfg and as the nftables ruleset,
// and checks that the real HAProxy and the real nft accept what came out.
func renderBoth(t *testing.T, yaml string, args ...string) (cfg, rules, stderr string, err error) {
	t.Helper()
	list := "apiVersion: v1\nkind: List\nitems:" + yaml + nodePortService("default", "good", "TCP", 8080, 30080) +
		nodePortService("default", "good-dns", "UDP", 5353, 30053) + badInputNodes
	var out [2]bytes.Buffer
	var errb bytes.Buffer
	for i, o := range []string{outputHAProxy, outputNFTables} {
		errb.Reset()
		err = renderCmd(append([]string{"-f", "-", "--output", o}, args...), env(nil), strings.NewReader(list), &out[i], &errb)
	}
	cfg, rules = out[0].String(), out[1].String()
	if !strings.Contains(cfg, "frontend fe_default_good_8080") || !strings.Contains(rules, "goto udp_default_good-dns_5353") {
		t.Errorf("the good Services are missing:\n%s\n%s\n%s", cfg, rules, errb.String())
	}
	golden.HAProxyAccepts(t, out[0].Bytes())
	netlab.NFTAccepts(t, out[1].Bytes())
	return cfg, rules, errb.String(), err
}

// A Service name or namespace with a newline, '#', a space, a quote or
// unicode (render reads files; the apiserver refuses such names) is an
// error naming the object; nothing of it reaches haproxy.cfg or the
// nftables ruleset, which the real HAProxy and nft accept. The old code
// wrote `bind :81` into the config from the name.
func TestRenderHostileNames(t *testing.T) {
	for _, tc := range []struct{ ns, name, proto string }{
		{"default", "web\n\tbind :81", "TCP"},
		{"default", "web #x", "TCP"},
		{"de\"fault", "web", "TCP"},
		{"default", "wéb", "TCP"},
		{"default", "dns\n}\ntable ip x {", "UDP"},
		{"default", "dns;drop", "UDP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, rules, stderr, err := renderBoth(t, nodePortService(tc.ns, tc.name, tc.proto, 81, 30081))
			if err == nil || !strings.Contains(err.Error(), "not what the apiserver admits") {
				t.Errorf("render: %v, want an error", err)
			}
			if !strings.Contains(stderr, "InvalidService") || !strings.Contains(stderr, "is not a DNS label") {
				t.Errorf("stderr does not name the Service's problem: %s", stderr)
			}
			if strings.Contains(cfg, ":81") || strings.Contains(rules, " 81 ") || strings.Contains(rules, "30081") || strings.Contains(cfg, "30081") {
				t.Errorf("the hostile Service reached the output:\n%s\n%s", cfg, rules)
			}
		})
	}
}

// Port numbers outside 1-65535 are refused where the Service enters the
// model, never wrapped to 16 bits: 70000 was `bind :4464`, -80 `:65456`,
// a nodePort of 99999 a server on :34463, in haproxy.cfg and nftables
// alike, and port 0 an invalid config with exit 0.
func TestRenderPortsOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		port, nodePort int
		wrapped        string
	}{{70000, 30081, "4464"}, {-80, 30081, "65456"}, {0, 30081, "default_web_0"}, {81, 99999, "34463"}, {81, -1, "65535"}} {
		for _, proto := range []string{"TCP", "UDP"} {
			t.Run(fmt.Sprintf("%s/%d/%d", proto, tc.port, tc.nodePort), func(t *testing.T) {
				cfg, rules, stderr, err := renderBoth(t, nodePortService("default", "web", proto, tc.port, tc.nodePort))
				if err == nil || !strings.Contains(stderr, "InvalidService") || !strings.Contains(stderr, "is outside 1-65535") {
					t.Errorf("render: %v, stderr %s: want the Service refused", err, stderr)
				}
				if strings.Contains(cfg+rules, tc.wrapped) || strings.Contains(cfg, "fe_default_web") {
					t.Errorf("a wrapped port reached the output:\n%s\n%s", cfg, rules)
				}
			})
		}
	}
}

// Node addresses that are no server's (unspecified, broadcast, multicast,
// unparsable) never become servers and are named on stderr; an
// AddressPool holding 0.0.0.0, ::, multicast, broadcast or link-local
// addresses is refused, and no Service is handed one. HAProxy accepts
// what is left.
func TestRenderSpecialAddresses(t *testing.T) {
	nodes := ""
	for i, a := range []string{"0.0.0.0", "255.255.255.255", "224.0.0.1", "::", "not-an-ip"} {
		nodes += fmt.Sprintf("- {apiVersion: v1, kind: Node, metadata: {name: bad%d}, status: {addresses: [{type: InternalIP, address: %q}], conditions: [{type: Ready, status: \"True\"}]}}\n", i, a)
	}
	cfg, rules, stderr, _ := renderBoth(t, "\n"+nodes)
	for _, bad := range []string{"0.0.0.0:", "255.255.255.255", "224.0.0.1", "[::]", ":::"} {
		if strings.Contains(cfg, "server s") && strings.Contains(cfg, bad) || strings.Contains(rules, bad) {
			t.Errorf("%s became a server:\n%s\n%s", bad, cfg, rules)
		}
	}
	for i := range 5 {
		if !strings.Contains(stderr, fmt.Sprintf(`address skipped: Node "bad%d"`, i)) {
			t.Errorf("node bad%d's address skipped without a word: %s", i, stderr)
		}
	}

	for _, rng := range []string{"0.0.0.0/30", "::/127", "224.0.0.0/30", "255.255.255.252/30", "169.254.0.0/30", "fe80::/126"} {
		pools := fmt.Sprintf(`
apiVersion: haproxy-k8s-sync.io/v1alpha1
kind: AddressPool
metadata: {name: bad}
spec: {addresses: [%q]}
---
apiVersion: v1
kind: Service
metadata: {name: lb, namespace: default, creationTimestamp: "2026-01-01T00:00:00Z"}
spec: {type: LoadBalancer, loadBalancerClass: haproxy-k8s-sync.io/lb, ports: [{name: p, port: 443, nodePort: 30443, protocol: TCP}]}
`, rng)
		var out, errb bytes.Buffer
		_ = renderCmd([]string{"-f", "-"}, env(nil), strings.NewReader(pools), &out, &errb)
		if !strings.Contains(errb.String(), "AddressPool bad:") || !strings.Contains(errb.String(), "which no Service may listen on") ||
			strings.Contains(errb.String(), "address: Service default/lb") || strings.Contains(out.String(), "bind") {
			t.Errorf("pool %s: a special address was handed out or the pool not refused:\n%s\n%s", rng, out.String(), errb.String())
		}
		golden.HAProxyAccepts(t, out.Bytes())
	}
}

// Flag and environment values HAProxy's config would carry follow a
// strict grammar: a newline in --stats-socket or --state-file (or their
// HAPROXY_K8S_SYNC_* variables) used to add directives to global and
// could comment out `level admin`; a zone in --bind-address or
// --monitor-address, or a port 0 there, gave configs HAProxy refuses;
// --global-maxconn -5 was ignored. Each is now a usage error (exit 2,
// with a hint), init writes nothing, and what passes is accepted by the
// real HAProxy.
func TestFlagValuesGrammar(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"stats socket newline", []string{"--stats-socket", "/run/a.sock\n\tmaxconn 1"}, nil},
		{"stats socket comment", []string{"--stats-socket", "/run/a.sock #"}, nil},
		{"state file newline", []string{"--state-file", "/var/lib/s\nlisten x"}, nil},
		{"state file quote", []string{"--state-file", `/var/lib/"s`}, nil},
		{"stats socket address", []string{"--stats-socket", "/run/a@b:80"}, nil},
		{"stats socket list", []string{"--stats-socket", "/run/a,/run/b"}, nil},
		{"socket too long", []string{"--stats-socket", "/" + strings.Repeat("a", 120)}, nil},
		{"env stats socket", nil, map[string]string{"HAPROXY_K8S_SYNC_STATS_SOCKET": "/run/a.sock\n\tuser root"}},
		{"env state file", nil, map[string]string{"HAPROXY_K8S_SYNC_STATE_FILE": "/x #"}},
		{"bind zone", []string{"--bind-address", "fe80::1%eth0"}, nil},
		{"monitor zone", []string{"--monitor-address", "[fe80::1%eth0]:9444"}, nil},
		{"monitor port 0", []string{"--monitor-address", "127.0.0.1:0"}, nil},
		{"env monitor port 0", nil, map[string]string{"HAPROXY_K8S_SYNC_MONITOR_ADDRESS": "127.0.0.1:0"}},
		{"maxconn negative", []string{"--global-maxconn", "-5"}, nil},
		{"env maxconn negative", nil, map[string]string{"HAPROXY_K8S_SYNC_GLOBAL_MAXCONN": "-5"}},
		{"targets", []string{"--targets", "all"}, nil},
		{"service", []string{"--service", "web"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, cmd := range []string{"init", "render"} {
				dir := t.TempDir()
				path := filepath.Join(dir, "haproxy.cfg")
				args := append([]string{cmd}, tc.args...)
				if cmd == "init" {
					args = append(args, "--haproxy-config", path)
				} else {
					args = append(args, "-f", "testdata/cluster.yaml")
				}
				var out, errb bytes.Buffer
				err := execute(t.Context(), args, env(tc.env), nil, &out, &errb)
				var u usageError
				if code := exitCode(err, &errb); code != exitUsage || !errors.As(err, &u) {
					t.Errorf("%s: exit %d (%v), want %d", cmd, code, err, exitUsage)
				}
				if !strings.Contains(errb.String(), "See 'haproxy-k8s-sync "+cmd+" --help' for its flags.") || strings.Count(strings.TrimSpace(errb.String()), "\n") != 1 {
					t.Errorf("%s: stderr %q: want one line and the hint", cmd, errb.String())
				}
				if _, err := os.Stat(path); err == nil || out.Len() > 0 {
					t.Errorf("%s: wrote a config", cmd)
				}
			}
		})
	}
	// What passes the grammar gives a config the real HAProxy accepts.
	dir := t.TempDir()
	path := filepath.Join(dir, "haproxy.cfg")
	args := []string{"--haproxy-config", path, "--stats-socket", dir + "/a+b~c_d-e.sock", "--state-file", dir + "/s_t-a.t~e",
		"--monitor-address", "[::1]:9444", "--global-maxconn", "0"}
	if err := initCmd(args, env(nil), os.Stderr); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden.HAProxyAccepts(t, cfg)
	if !strings.Contains(string(cfg), "\tstats socket "+dir+"/a+b~c_d-e.sock mode 600 level admin") {
		t.Errorf("the stats socket line:\n%s", cfg)
	}
}
