package source

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/gwcrd"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
)

// The tests of this package that need a real kube-apiserver share one,
// with every CRD of the Gateway API's standard channel: started by the
// first that asks, stopped when the package's tests end (TestMain). A
// start is etcd, the apiserver and the CRDs (5-12 s here, loaded); each
// test used to start its own. Each test keeps to a namespace of its own
// (testNamespace), so that what another test (or an earlier run of
// -count) left there meets none of its names; the informers, cluster-wide,
// may see those objects, which the tests' checks allow for.
var sharedKube struct {
	once sync.Once
	s    *kubeapi.Server
	stop func()
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedKube.stop != nil {
		sharedKube.stop()
	}
	if sharedKube.dir != "" {
		_ = os.RemoveAll(sharedKube.dir)
	}
	os.Exit(code)
}

// sharedAPIServer is the package's apiserver, started at the first call,
// with the Gateway API's CRDs served. A test that fails gets the last
// lines of its log.
func sharedAPIServer(t *testing.T) *kubeapi.Server {
	t.Helper()
	sharedKube.once.Do(func() {
		begin := time.Now()
		if sharedKube.dir, sharedKube.err = os.MkdirTemp("", "source-kubeapi-"); sharedKube.err != nil {
			return
		}
		sharedKube.s, sharedKube.stop, sharedKube.err = kubeapi.StartProcess(sharedKube.dir)
		if sharedKube.err != nil {
			return
		}
		sharedKube.err = errors.New("the Gateway API's CRDs were not installed (the first test to ask failed)")
		gwcrd.InstallAll(t, sharedKube.s.Config) // t.Fatal on failure: err stays
		sharedKube.err = nil
		t.Logf("kubeapi: the package's apiserver %s ready, the Gateway API's CRDs served, in %v (dir %s)",
			sharedKube.s.URL, time.Since(begin).Round(time.Millisecond), sharedKube.dir)
	})
	if sharedKube.err != nil {
		t.Fatalf("kubeapi: %v", sharedKube.err)
	}
	s := sharedKube.s
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(s.LogTail(60))
		}
	})
	return s
}

// testNamespace creates a namespace of a generated name for t on the
// shared apiserver and returns its name.
func testNamespace(t *testing.T, s *kubeapi.Server) string {
	t.Helper()
	ns, err := s.Client(t).CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "source-test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a namespace: %v", err)
	}
	return ns.Name
}
