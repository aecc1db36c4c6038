package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// render with AddressPool objects: each Service on its own addresses, the
// assignments told on stderr, problems named.
func TestRenderWithPools(t *testing.T) {
	for _, out := range []string{"haproxy", "nftables"} {
		var stdout, stderr bytes.Buffer
		if err := renderCmd([]string{"-f", "testdata/pools.yaml", "--stats-socket", "/run/hks/admin.sock", "--state-file", "/var/lib/hks/state", "--output", out},
			env(nil), nil, &stdout, &stderr); err != nil {
			t.Fatal(err)
		}
		name := map[string]string{"haproxy": "pools.cfg", "nftables": "pools.nft"}[out]
		golden.Assert(t, name, stdout.Bytes())
		if out == "haproxy" {
			golden.HAProxyAccepts(t, stdout.Bytes())
		}
		for _, want := range []string{
			"address: Service shop/a: 198.18.0.10, 2001:db8::10",
			"address: Service shop/b: 198.18.0.11",
			"address: Service shop/c: 198.18.0.10",
			"address: Service shop/e: 203.0.113.0",
			"Service shop/d: AddressNotInPool",
		} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
			}
		}
	}
}
