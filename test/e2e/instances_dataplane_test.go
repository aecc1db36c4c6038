package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane/dataplanetest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// opsDataplane starts the test server standing in for the Data Plane
// API, holding the operator's backend of the single-Service mode (five
// template slots in maintenance), and returns it with the --instance
// value that reaches it as user admin with password, from a file.
func opsDataplane(t *testing.T, backend, password string) (*dataplanetest.Server, string) {
	t.Helper()
	api := dataplanetest.Start(t, dataplanetest.Options{Users: map[string]string{"admin": password}})
	api.Load([]dataplanetest.Section{{
		Object:    dataplane.Object{"name": backend, "mode": "tcp", "balance": map[string]any{"algorithm": "roundrobin"}},
		Templates: []dataplane.Object{{"prefix": "web", "num_or_range": "5", "fqdn": "127.0.0.1", "port": 65535, "maintenance": "enabled"}},
	}}, nil)
	pw := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pw, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return api, "name=c,dataplane-url=" + api.URL + ",username=admin,password-file=" + pw
}

// One controller, a local HAProxy and a Data Plane API (the test server
// standing in for it) as two --instance: both follow the Service's nodes,
// each reports under its own metrics label; the local HAProxy serves its
// own stats page (stats-page=). Single-Service mode: the
// API's backend is the operator's, so the two never bind the same port.
func TestInstancesMixHAProxyAndDataplane(t *testing.T) {
	e := newEnv(t)
	np := e.threeNodes()
	const backend = "be_web_ops"
	api, apiInstance := opsDataplane(t, backend, "pw-instances")

	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "web", Port: port, NodePort: np})
	e.setEndpoints("web", pod(1, "n1"))
	maddr, page := instancesMetricsAddr(t), instancesMetricsAddr(t)
	e.startController("--service", ns+"/web", "--backend-name", backend,
		"--instance", localInstance("a", e.dir, e.hap, "stats-page="+page), "--instance", apiInstance,
		"--metrics-address", maddr)
	node := func(i int) string { return fmt.Sprintf("127.%d.0.%d:%d", e.subnet, i, np) }

	e.eventually("HAProxy a serves every node", instanceServes(port, "n1", "n2", "n3"))
	e.eventually("API c serves every node", func() error { return servingIs(api, backend, set3(node(1), node(2), node(3))) })

	e.eventually("HAProxy a serves its own stats page", httpStatus("http://"+page+"/stats;csv", 200))

	if err := lab.SetNodeExcluded(bg, e.client, "n2", true); err != nil {
		t.Fatal(err)
	}
	e.eventually("HAProxy a drops excluded n2", instanceServes(port, "n1", "n3"))
	e.eventually("API c drops excluded n2", func() error { return servingIs(api, backend, set3(node(1), node(3))) })

	m := &scraper{url: "http://" + maddr + "/metrics"}
	e.eventually("a's attempts under haproxy/a", m.atLeast(`haproxy_k8s_sync_pass_duration_seconds{driver="haproxy/a",outcome="applied"}`, 2))
	e.eventually("c's attempts under dataplane/c", m.atLeast(`haproxy_k8s_sync_pass_duration_seconds{driver="dataplane/c",outcome="applied"}`, 2))
	if strings.Contains(e.ctlLog.String(), "pw-instances") {
		t.Error("the Data Plane API password was logged")
	}
}
