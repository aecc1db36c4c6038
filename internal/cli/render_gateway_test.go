package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// render of Gateway API objects: an HTTP listener's frontend and the map
// files it reads (-o DIR), a route refused with a warning naming why.
func TestRenderGatewayHTTP(t *testing.T) {
	cfg, maps, stderr := renderToDir(t, "testdata/gateway-http.yaml")
	golden.Assert(t, "gateway-http.cfg", cfg)
	golden.Assert(t, "gateway-http-maps.txt", maps)
	if want := `warning: HTTPRoute apps/bad parent gw: Accepted=False UnsupportedValue: rules[0].matches[0]: path "/a b" is not an absolute path`; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}

	// Without -o: the maps have nowhere to go.
	var stdout bytes.Buffer
	stderr.Reset()
	err := renderCmd([]string{"-f", "testdata/gateway-http.yaml"}, env(nil), nil, &stdout, stderr)
	if err == nil || !strings.Contains(err.Error(), "-o DIR") {
		t.Errorf("render without -o: %v, want an error naming -o DIR", err)
	}
}

// TestRenderGatewayGRPC: GRPCRoutes rendered into the HTTP frontend's
// maps beside HTTPRoutes' (the Exact path /service/method, the prefix
// /service), their backends HTTP/2 in clear (proto h2) whatever the
// Service port's appProtocol; a route the table cannot express refused
// with its reason.
func TestRenderGatewayGRPC(t *testing.T) {
	cfg, maps, stderr := renderToDir(t, "testdata/gateway-grpc.yaml")
	golden.Assert(t, "gateway-grpc.cfg", cfg)
	golden.Assert(t, "gateway-grpc-maps.txt", maps)
	if want := `warning: GRPCRoute apps/bad parent gw: Accepted=False UnsupportedValue: rules[0].matches[0]: a method match without a service is not supported`; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}
}
