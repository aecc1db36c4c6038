package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	networkingclient "k8s.io/client-go/kubernetes/typed/networking/v1"
	"k8s.io/client-go/util/retry"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// httpPod is an HTTP server at ip:port (an address of the test's own
// network namespace) answering "NAME host=HOST path=PATH" and the request
// headers asked for by the test (X-Forwarded-Prefix).
func httpPod(t *testing.T, name, ip string, port int) {
	t.Helper()
	servePod(t, ip, port, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { // ingress_retry_test.go
		fmt.Fprintf(w, "%s host=%s path=%s xfp=%s", name, r.Host, r.URL.Path, r.Header.Get("X-Forwarded-Prefix"))
	}))
}

// httpService is Service name (port 80) whose endpoint is ip:8080.
func (g *gwEnv) httpService(name, ip string) {
	g.t.Helper()
	g.serviceOf(name, ip, 8080)
}

// get sends GET path with Host host to serviceIP():port (over TLS with SNI
// host when tlsOn) and returns the status and body; headers are
// "Name: value".
func get(port int, tlsOn bool, host, path string, headers ...string) (int, string, error) {
	return getAt(serviceIP(), port, tlsOn, host, path, headers...)
}

// getAt is get to addr.
func getAt(addr string, port int, tlsOn bool, host, path string, headers ...string) (int, string, error) {
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{ServerName: host, InsecureSkipVerify: true}} //nolint:gosec // the test's own certificates
	c := &http.Client{Transport: tr, Timeout: 3 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(addr, fmt.Sprint(port)), path), nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	for _, h := range headers {
		n, v, _ := strings.Cut(h, ": ")
		req.Header.Set(n, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if loc := resp.Header.Get("Location"); loc != "" {
		return resp.StatusCode, "location=" + loc, err
	}
	return resp.StatusCode, string(b), err
}

// answers is nil once GET path on host answers status with a body
// starting with want.
func answers(port int, tlsOn bool, host, path string, status int, want string, headers ...string) func() error {
	return func() error {
		code, body, err := get(port, tlsOn, host, path, headers...)
		if err != nil {
			return err
		}
		if code != status || !strings.HasPrefix(body, want) {
			return fmt.Errorf("GET %s%s: %d %q, want %d %q", host, path, code, body, status, want)
		}
		return nil
	}
}

// servedCert is the first DNS name of the certificate serviceIP():port
// serves for SNI host.
func servedCert(port int, host string) (string, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", net.JoinHostPort(serviceIP(), fmt.Sprint(port)),
		&tls.Config{ServerName: host, InsecureSkipVerify: true}) //nolint:gosec // the test's own certificates
	if err != nil {
		return "", err
	}
	defer c.Close()
	certs := c.ConnectionState().PeerCertificates
	if len(certs) == 0 || len(certs[0].DNSNames) == 0 {
		return "", fmt.Errorf("no certificate names")
	}
	return certs[0].DNSNames[0], nil
}

func tlsSecret(t *testing.T, name string, hosts ...string) *corev1.Secret {
	c := testcert.Issue(t, testcert.Spec{CN: hosts[0], DNS: hosts}, testcert.Cert{})
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: c.PEM(), corev1.TLSPrivateKeyKey: c.KeyPEM(t)}}
}

func prefix(p string, svc string) netv1.HTTPIngressPath {
	t := netv1.PathTypePrefix
	return netv1.HTTPIngressPath{Path: p, PathType: &t, Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: svc, Port: netv1.ServiceBackendPort{Number: 80}}}}
}

func exact(p string, svc string) netv1.HTTPIngressPath {
	x := prefix(p, svc)
	t := netv1.PathTypeExact
	x.PathType = &t
	return x
}

func ingressOf(name, host string, ann map[string]string, paths ...netv1.HTTPIngressPath) *netv1.Ingress {
	class := "hks"
	return &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann},
		Spec: netv1.IngressSpec{IngressClassName: &class, Rules: []netv1.IngressRule{{Host: host,
			IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{Paths: paths}}}}}}
}

// TestIngressServedWithoutReload: Ingresses of our IngressClass served on
// the HTTP path beside the gateway mode, with exactly the shipped roles
// (deploy/gateway/rbac.yaml and ingress-rbac.yaml): hosts, Prefix paths
// element-wise, Exact paths, TLS from a Secret with HTTP redirected,
// status.loadBalancer.ingress once served; then a new Ingress, a path, an
// annotation (upstream-vhost, x-forwarded-prefix, canary weight), a
// certificate changed and a refused snippet: 0 reloads (a canary by a
// header name new to the table: 1), the refused Ingress keeps its last
// good version and gets an Event.
func TestIngressServedWithoutReload(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	ing, httpPort, httpsPort := g.ing, g.httpPort, haproxytest.FreePort(t)
	g.web("web", 0)
	g.web("canary", 1)
	if _, err := g.client.CoreV1().Secrets(ns).Create(bg, tlsSecret(t, "shop-tls", "shop.example.com"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	shop := ingressOf("shop", "shop.example.com", nil, prefix("/app", "web"), exact("/exact", "canary"))
	shop.Spec.TLS = []netv1.IngressTLS{{Hosts: []string{"shop.example.com"}, SecretName: "shop-tls"}}
	g.create(shop)
	g.start(append(leaderFlags, fmt.Sprintf("--ingress-https-port=%d", httpsPort))...)

	const host = "shop.example.com"
	g.eventually("HTTPS serves /app", answers(httpsPort, true, host, "/app/x", 200, "web host=shop.example.com path=/app/x"))
	for _, c := range []struct {
		path   string
		status int
		want   string
	}{
		{"/app", 200, "web "},
		{"/app/", 200, "web "},
		{"/apple", 404, ""}, // Prefix is element-wise
		{"/exact", 200, "canary "},
		{"/exact/x", 404, ""},
	} {
		if err := answers(httpsPort, true, host, c.path, c.status, c.want)(); err != nil {
			t.Error(err)
		}
	}
	// HTTP redirects to HTTPS (ssl-redirect's default for a TLS host).
	// Awaited, not asked once: in tproxy mode the class's HTTP frontend
	// is behind the fixed HTTP listener, whose set element the kernel's
	// driver adds only once the reload is confirmed (tproxy.Ordered),
	// while the HTTPS frontend's own bind serves as soon as the new
	// worker runs: a few hundred milliseconds apart (docs/listeners.md).
	g.eventually("HTTP redirects to HTTPS", answers(httpPort, false, host, "/app", 308, fmt.Sprintf("location=https://%s:%d/app", host, httpsPort)))
	// ingress-nginx's redirect drops a '/' ending the path and query
	// unless preserve-trailing-slash (below).
	for path, want := range map[string]string{"/app/": "/app", "/app/?q=1": "/app/?q=1", "/app/?q=/": "/app/?q="} {
		if err := redirectsTo(httpPort, host, path, fmt.Sprintf("https://%s:%d%s", host, httpsPort, want))(); err != nil {
			t.Error(err)
		}
	}
	if name, err := servedCert(httpsPort, host); err != nil || name != host {
		t.Errorf("certificate for %s: %q, %v", host, name, err)
	}
	g.eventually("status lists the address", func() error {
		o, err := ing.Ingresses(ns).Get(bg, "shop", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lb := o.Status.LoadBalancer.Ingress; len(lb) != 1 || lb[0].IP != serviceIP() {
			return fmt.Errorf("status.loadBalancer.ingress %+v", lb)
		}
		return nil
	})

	before := g.reloads()
	// A new Ingress on a host without TLS, with header changes.
	blog := ingressOf("blog", "blog.example.com", map[string]string{
		ingress.NginxPrefix + "upstream-vhost":     "internal.example.com",
		ingress.NginxPrefix + "x-forwarded-prefix": "/blog",
	}, prefix("/", "web"))
	if _, err := ing.Ingresses(ns).Create(bg, blog, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.eventually("a new Ingress serves", answers(httpPort, false, "blog.example.com", "/post", 200, "web host=internal.example.com path=/post xfp=/blog"))

	// A path added to an Ingress.
	updateIngress(t, ing.Ingresses(ns), "shop", func(mod *netv1.Ingress) {
		mod.Spec.Rules[0].HTTP.Paths = append(mod.Spec.Rules[0].HTTP.Paths, prefix("/shop", "canary"))
	})
	g.eventually("a new path serves", answers(httpsPort, true, host, "/shop/cart", 200, "canary "))
	updateIngress(t, ing.Ingresses(ns), "shop", func(mod *netv1.Ingress) {
		mod.Annotations = map[string]string{ingress.NginxPrefix + "preserve-trailing-slash": "true"}
	})
	slash := redirectsTo(httpPort, host, "/app/", fmt.Sprintf("https://%s:%d/app/", host, httpsPort))
	g.eventually("preserve-trailing-slash keeps the '/'", slash)

	// A value not true or false: refused, the last good version kept.
	updateIngress(t, ing.Ingresses(ns), "shop", func(mod *netv1.Ingress) {
		mod.Annotations[ingress.NginxPrefix+"preserve-trailing-slash"] = "keep"
	})
	g.eventually("an Event refuses preserve-trailing-slash", g.ingressEvent("shop", "Refused", "preserve-trailing-slash"))
	if err := slash(); err != nil {
		t.Errorf("the last good version of a refused Ingress: %v", err)
	}
	updateIngress(t, ing.Ingresses(ns), "shop", func(mod *netv1.Ingress) {
		delete(mod.Annotations, ingress.NginxPrefix+"preserve-trailing-slash")
	})
	g.eventually("the trailing '/' dropped again", redirectsTo(httpPort, host, "/app/", fmt.Sprintf("https://%s:%d/app", host, httpsPort)))
	if r := g.reloads(); r != before {
		t.Errorf("a new Ingress, a path, header annotations and preserve-trailing-slash reloaded HAProxy %d times, want 0", r-before)
	}
	// A canary Ingress by header, then by weight 100. The header's name
	// is new to the table: a header matched is a rule of the
	// configuration (as for HTTPRoutes' header matches), one reload.
	before = g.reloads()
	can := ingressOf("blog-canary", "blog.example.com", map[string]string{
		ingress.NginxPrefix + "canary":           "true",
		ingress.NginxPrefix + "canary-by-header": "X-Canary",
	}, prefix("/", "canary"))
	if _, err := ing.Ingresses(ns).Create(bg, can, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.eventually("canary by header", answers(httpPort, false, "blog.example.com", "/", 200, "canary ", "X-Canary: always"))
	if err := answers(httpPort, false, "blog.example.com", "/", 200, "web ")(); err != nil {
		t.Errorf("without the header: %v", err)
	}
	if r := g.reloads(); r != before+1 {
		t.Errorf("a canary by a new header name reloaded HAProxy %d times, want 1", r-before)
	}
	before = g.reloads()
	updateIngress(t, ing.Ingresses(ns), "blog-canary", func(can *netv1.Ingress) {
		can.Annotations[ingress.NginxPrefix+"canary-weight"] = "100"
	})
	g.eventually("canary by weight 100", answers(httpPort, false, "blog.example.com", "/", 200, "canary "))
	if err := answers(httpPort, false, "blog.example.com", "/", 200, "web ", "X-Canary: never")(); err != nil {
		t.Errorf("X-Canary: never: %v", err)
	}

	// The certificate changes: a new one for the same Secret.
	sec := tlsSecret(t, "shop-tls", host, "www.shop.example.com")
	if _, err := g.client.CoreV1().Secrets(ns).Update(bg, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := sec.Data[corev1.TLSCertKey]
	g.eventually("the new certificate is served", func() error {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", net.JoinHostPort(serviceIP(), fmt.Sprint(httpsPort)),
			&tls.Config{ServerName: host, InsecureSkipVerify: true}) //nolint:gosec // the test's own certificates
		if err != nil {
			return err
		}
		defer c.Close()
		if got := c.ConnectionState().PeerCertificates[0].DNSNames; !slices.Contains(got, "www.shop.example.com") {
			return fmt.Errorf("served names %v (want the new certificate's; %d bytes of PEM)", got, len(want))
		}
		return nil
	})

	// A snippet: refused, an Event, the last good version keeps serving.
	updateIngress(t, ing.Ingresses(ns), "shop", func(mod *netv1.Ingress) {
		mod.Annotations = map[string]string{ingress.NginxPrefix + "configuration-snippet": "more_set_headers \"X: 1\";"}
		mod.Spec.Rules[0].HTTP.Paths = mod.Spec.Rules[0].HTTP.Paths[:1]
	})
	g.eventually("an Event refuses the snippet", g.ingressEvent("shop", "Refused", "configuration-snippet"))
	if err := answers(httpsPort, true, host, "/shop/cart", 200, "canary ")(); err != nil {
		t.Errorf("the last good version of a refused Ingress: %v", err)
	}
	if err := answers(httpPort, false, "blog.example.com", "/", 200, "canary ")(); err != nil {
		t.Errorf("another Ingress beside a refused one: %v", err)
	}
	if r := g.reloads(); r != before {
		t.Errorf("a canary weight, a certificate and a refused snippet reloaded HAProxy %d times, want 0", r-before)
	}
}

// redirectsTo is nil once GET path on host over HTTP answers 308 with
// Location exactly location.
func redirectsTo(port int, host, path, location string) func() error {
	return func() error {
		code, got, err := get(port, false, host, path)
		if err != nil {
			return err
		}
		if code != 308 || got != "location="+location {
			return fmt.Errorf("GET %s%s: %d %q, want 308 location=%s", host, path, code, got, location)
		}
		return nil
	}
}

// updateIngress changes the Ingress name with mutate, again on a
// conflict: the controller writes the Ingress's status meanwhile.
func updateIngress(t *testing.T, c networkingclient.IngressInterface, name string, mutate func(*netv1.Ingress)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		o, err := c.Get(bg, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(o)
		_, err = c.Update(bg, o, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// createIngressClass creates the IngressClass "hks" of our controller,
// which the Ingress tests' controllers serve (--ingress-class=hks).
func createIngressClass(t testing.TB, ing networkingclient.NetworkingV1Interface) {
	t.Helper()
	if _, err := ing.IngressClasses().Create(bg, &netv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "hks"},
		Spec: netv1.IngressClassSpec{Controller: ingress.ControllerName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
