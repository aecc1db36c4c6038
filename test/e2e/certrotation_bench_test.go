package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// BenchmarkCertificateRotationEndToEnd: the time from a Secret's update
// (the API write sent) to the first TLS handshake through a real HAProxy
// that gets the new certificate, for an HTTPS listener of a Gateway that
// also carries HKS_BENCH_ROUTES HTTPRoutes (default 1,000, on an HTTP
// listener beside it: each pass compiles them), while two clients
// complete verified handshakes one after the other;
// HKS_BENCH_ROTATIONS rotations (default 20): p50, p99 and max, failed
// handshakes and reloads (the goal: <= 1 s, 0, 0).
//
//	HKS_TESTBIN_DIR=... go test -run '^$' -bench BenchmarkCertificateRotationEndToEnd -benchtime 1x ./test/e2e/
func BenchmarkCertificateRotationEndToEnd(b *testing.B) {
	if !inNetns(b, podAddrs...) {
		return
	}
	n, rotations := benchEnvInt("HKS_BENCH_ROUTES", 1000), benchEnvInt("HKS_BENCH_ROTATIONS", 20)
	kube, client, gc := benchGatewayAPI(b)
	ctx := context.Background()
	benchHTTPPod(b, client, "web-a", podAddrs[0], 8080)
	httpPort, httpsPort := haproxytest.FreePort(b), haproxytest.FreePort(b)
	ca := testcert.CA(b, "rotation CA")
	s, leaf := rotationSecret(b, "cert", "a.example.com", ca)
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	gw := httpsGateway(httpsPort, "cert")
	gw.Spec.Listeners = append(gw.Spec.Listeners, listener("http", gwv1.HTTPProtocolType, httpPort, ""))
	if _, err := gc.GatewayV1().Gateways(ns).Create(ctx, gw, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	createRoutes(b, gc, n) // on the HTTP listener
	a := benchHTTPRoute("a", "a.example.com", "web-a")
	a.Spec.ParentRefs = parentRef("https")
	if _, err := gc.GatewayV1().HTTPRoutes(ns).Create(ctx, a, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	hap, _ := benchControllerHAProxy(b, kube, "--mode=gateway")
	h := newHandshaker(fmt.Sprintf("127.0.0.1:%d", httpsPort), "a.example.com", ca)
	t0 := time.Now()
	if _, err := h.until(leaf, t0, 10*time.Minute); err != nil {
		b.Fatal(err)
	}
	synced := time.Since(t0)
	reloads := benchReloads(b, hap)
	before := reloads()
	stop := h.startLoad(2, 5*time.Millisecond)
	var took []time.Duration
	for i := range rotations {
		next, start := rotate(b, client, "cert", "a.example.com", ca)
		d, err := h.until(next, start, time.Minute)
		if err != nil {
			stop()
			b.Fatalf("rotation %d: %v", i, err)
		}
		took = append(took, d)
	}
	stop()
	rel := reloads() - before
	var first error
	if e := h.firstErr.Load(); e != nil {
		first = *e
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(pct(took, 0.5)), "p50-ms")
	b.ReportMetric(ms(pct(took, 0.99)), "p99-ms")
	b.ReportMetric(ms(pct(took, 1)), "max-ms")
	b.ReportMetric(float64(h.failed.Load()), "failed-handshakes")
	b.ReportMetric(float64(rel), "reloads")
	b.Logf("%d HTTPRoutes beside (served %s after the controller started); %d rotations: p50 %s p99 %s max %s; %d handshakes meanwhile, %d failed (first: %v); %d reloads",
		n, synced.Round(time.Millisecond), rotations, pct(took, 0.5), pct(took, 0.99), pct(took, 1), h.ok.Load(), h.failed.Load(), first, rel)
}
