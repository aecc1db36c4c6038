package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// lbService is a LoadBalancer Service of our class in YAML, metadata as
// given ("name: x, namespace: y"), on port.
func lbService(meta string, port int, extra string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {%s}\n"+
		"spec: {type: LoadBalancer, loadBalancerClass: haproxy-k8s-sync.io/lb, ports: [{name: http, port: %d, nodePort: %d, protocol: TCP}]%s}\n",
		meta, port, 30000+port, extra)
}

const renderNode = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {addresses: [{type: InternalIP, address: 192.0.2.10}], conditions: [{type: Ready, status: \"True\"}]}\n"

// render exits non-zero, naming the object or field, whenever what it
// prints would not be what run serves for the same objects: input it
// does not read (another kind, Gateway API objects, duplicates, an object
// that does not decode or of an API version it does not read), an input
// with nothing in it, a --service naming no Service of the input, source
// ranges too many for one line of HAProxy's. What it reads as run would
// (a Service without a namespace is in default) renders with exit 0.
func TestRenderRefusesWhatRunWouldNotServe(t *testing.T) {
	ok := lbService("name: ok, namespace: default", 81, "")
	var ranges []string
	for i := range 60 {
		ranges = append(ranges, fmt.Sprintf("10.0.%d.0/24", i))
	}
	many := lbService("name: many, namespace: default", 82, ", loadBalancerSourceRanges: ["+strings.Join(ranges, ", ")+"]")
	for _, tc := range []struct {
		name, input string
		args        []string
		code        int
		stderr      []string // substrings of stderr
		stdout      string   // a substring of stdout
	}{
		{name: "valid", input: ok + "---\n" + renderNode, stdout: "backend be_default_ok_81"},
		{name: "no namespace is default", input: lbService("name: nons", 81, "") + "---\n" + renderNode, stdout: "backend be_default_nons_81"},
		{name: "empty input", input: "", code: 1, stderr: []string{"the input holds no Service, EndpointSlice, Node or AddressPool"}},
		{name: "only other kinds", input: "apiVersion: v1\nkind: Pod\nmetadata: {name: c, namespace: x}\n", code: 1,
			stderr: []string{"(Pod x/c): kind not read", "1 object(s) of a kind render does not read"}},
		{name: "Gateway API objects render does not read", input: ok + "---\napiVersion: gateway.networking.k8s.io/v1\nkind: TCPRoute\nmetadata: {name: r, namespace: x}\n", code: 1,
			stderr: []string{"document 2 (TCPRoute x/r): kind not read: render reads GatewayClasses, Gateways, HTTPRoutes, GRPCRoutes and ReferenceGrants"}},
		{name: "a misspelt kind", input: ok + "---\napiVersion: v1\nkind: Servce\nmetadata: {name: s, namespace: x}\n", code: 1,
			stderr: []string{"(Servce x/s): kind not read"}},
		{name: "duplicates", input: ok + "---\n" + lbService("name: ok", 83, ""), code: 1,
			stderr: []string{"document 2 (Service default/ok): duplicate object: the same object as", "document 1; the first is kept", "1 duplicate object(s)"}},
		{name: "an object that does not decode", input: ok + "---\n" + renderNode + "---\napiVersion: v1\nkind: Service\nmetadata: {name: bad, namespace: x}\nspec: {ports: nope}\n", code: 1,
			stderr: []string{"document 3 (Service x/bad): cannot decode object", "1 object(s) could not be decoded or are of an API version render does not read"},
			stdout: "backend be_default_ok_81"},
		{name: "an API version render does not read", input: ok + "---\n" + renderNode + "---\napiVersion: discovery.k8s.io/v1beta1\nkind: EndpointSlice\nmetadata: {name: s, namespace: default}\n", code: 1,
			stderr: []string{"document 3 (EndpointSlice default/s): unsupported API version", "1 object(s) could not be decoded or are of an API version render does not read"},
			stdout: "backend be_default_ok_81"},
		{name: "misspelt --service", input: ok, args: []string{"--service", "default/okk"}, code: 1,
			stderr: []string{"--service default/okk: no such Service in the input"}},
		{name: "--service", input: ok + "---\n" + renderNode, args: []string{"--service", "default/ok"}, stdout: "be_default_ok_81"},
		{name: "too many source ranges for one line", input: ok + "---\n" + many + "---\n" + renderNode, code: 1,
			stderr: []string{"Service default/many (frontend fe_default_many_82): a line of", "more than the 64 HAProxy reads", "-o DIR writes source ranges into files"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "in.yaml")
			if err := os.WriteFile(path, []byte(tc.input), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			code := Main(append([]string{"haproxy-k8s-sync", "render", "-f", path}, tc.args...), nil, &out, &errb)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, errb.String())
			}
			for _, want := range tc.stderr {
				if !strings.Contains(errb.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, errb.String())
				}
			}
			if !strings.Contains(out.String(), tc.stdout) { // what did render is printed, exit 1 or not
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, out.String())
			}
		})
	}
}

// render -o DIR writes what run serves from DIR/haproxy.cfg: source ranges
// in ACL files beside it (more than one line of HAProxy's could hold,
// accepted by the real haproxy -c), and nothing an earlier render left
// that this one would not write (a udp.nft, ACL files of frontends gone).
func TestRenderDirIsWhatRunServes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	var ranges []string
	for i := range 100 {
		ranges = append(ranges, fmt.Sprintf("10.0.%d.0/24", i))
	}
	many := lbService("name: many, namespace: default", 82, ", loadBalancerSourceRanges: ["+strings.Join(ranges, ", ")+"]")
	render := func(input string) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "in.yaml")
		if err := os.WriteFile(path, []byte(input), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		if code := Main([]string{"haproxy-k8s-sync", "render", "-f", path, "-o", dir}, nil, &out, &errb); code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, errb.String())
		}
		return errb.String()
	}

	render(many + "---\n" + renderNode)
	cfg, err := os.ReadFile(filepath.Join(dir, renderConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cfg), "10.0.99.0/24") {
		t.Errorf("ranges inline in haproxy.cfg:\n%s", cfg)
	}
	acl, _ := filepath.Glob(filepath.Join(dir, "acl", "*.acl"))
	var all string
	for _, f := range acl {
		b, _ := os.ReadFile(f)
		all += string(b)
	}
	if len(acl) == 0 || !strings.Contains(all, "10.0.99.0/24\n") {
		t.Errorf("ACL files %v hold %q", acl, all)
	}
	golden.HAProxyAccepts(t, cfg) // reads the ACL files by their absolute names

	// Then a cluster with a UDP port and no ranges, then one without UDP
	// ports: no udp.nft is left beside a haproxy.cfg it does not match.
	udp, err := os.ReadFile("testdata/udp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	stderr := render(string(udp))
	if _, err := os.Stat(filepath.Join(dir, renderRulesFile)); err != nil {
		t.Fatalf("no udp.nft: %v\n%s", err, stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "acl", "*.acl")); len(left) != 0 {
		t.Errorf("ACL files of a frontend gone left: %v\n%s", left, stderr)
	}
	stderr = render(lbService("name: ok, namespace: default", 81, "") + "---\n" + renderNode)
	if _, err := os.Stat(filepath.Join(dir, renderRulesFile)); !os.IsNotExist(err) {
		t.Errorf("udp.nft left beside a config without UDP ports: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "removed "+filepath.Join(dir, renderRulesFile)) {
		t.Errorf("stderr does not say udp.nft was removed:\n%s", stderr)
	}
	if _, err := exec.LookPath("haproxy"); err == nil {
		cfg, _ = os.ReadFile(filepath.Join(dir, renderConfigFile))
		golden.HAProxyAccepts(t, cfg)
	}
}
