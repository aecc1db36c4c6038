package conformance

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// envHAProxy lists the haproxy binaries the suite runs against, one after
// the other on the one tier (space-separated; unset: haproxytest.Bin()).
// make test gives each of TEST_VERSIONS (and the host's 2.6 first when
// its tproxy job does not run it, hack/test.sh): the real-node tier, the
// longest part of a run to start, is started once.
const envHAProxy = "HKS_CONFORMANCE_HAPROXY"

func haproxyBins() []string {
	if bins := strings.Fields(os.Getenv(envHAProxy)); len(bins) > 0 {
		return bins
	}
	return []string{haproxytest.Bin()}
}

var versionRE = regexp.MustCompile(`(?i)HAProxy version ([0-9][0-9.]*)`)

// versionName is the subtest's name for the binary: haproxy-X.Y.Z, from
// its own -v.
func versionName(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "-v").CombinedOutput()
	if err != nil {
		t.Fatalf("%s -v: %v: %s", bin, err, out)
	}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s -v: no version in %q", bin, out)
	}
	return "haproxy-" + strings.TrimSuffix(string(m[1]), ".")
}

// clearGatewayStatus empties every Gateway's status, so that none reads as
// Accepted or Programmed until the controller now running has said so for
// the HAProxy it drives (the previous run's controller wrote the rest).
func clearGatewayStatus(ctx context.Context, t *testing.T, gc gwclient.Interface) {
	t.Helper()
	list, err := gc.GatewayV1().Gateways(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range list.Items {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := gc.GatewayV1().Gateways(g.Namespace).Get(ctx, g.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status = gwv1.GatewayStatus{}
			_, err = gc.GatewayV1().Gateways(g.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("clearing Gateway %s/%s's status: %v", g.Namespace, g.Name, err)
		}
	}
	t.Logf("conformance: %d Gateways' status cleared for the next HAProxy", len(list.Items))
}
