package cli

import (
	"strings"
	"testing"
)

// The Ingress flags are refused outside the gateway mode, without
// --ingress-class, with --instance, or malformed, before anything runs.
func TestIngressFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--ingress-class=haproxy"}, "--ingress-class serves Ingresses beside the Gateways: give --mode=gateway"},
		{[]string{"run", "--mode=gateway", "--ingress-http-port=8080"}, "--ingress-http-port needs --ingress-class"},
		{[]string{"run", "--mode=gateway", "--ingress-class=haproxy", "--ingress-http-port=443"}, "two different ports"},
		{[]string{"run", "--mode=gateway", "--ingress-class=haproxy", "--ingress-default-certificate=nonamespace"}, "want NAMESPACE/NAME"},
		{[]string{"run", "--mode=gateway", "--ingress-proxy-set-headers=ns/h"}, "--ingress-proxy-set-headers needs --ingress-class"},
		{[]string{"run", "--mode=gateway", "--ingress-class=haproxy", "--ingress-proxy-set-headers=h"}, "--ingress-proxy-set-headers: want NAMESPACE/NAME"},
		{[]string{"run", "--mode=gateway", "--ingress-class=haproxy", "--ingress-add-headers=ns/a/b"}, "--ingress-add-headers: want NAMESPACE/NAME"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errb := mainOf(tc.args...)
			if code != exitUsage || out != "" || !strings.Contains(errb, tc.want) {
				t.Errorf("exit %d (want %d), stdout %q, stderr %q, want %q", code, exitUsage, out, errb, tc.want)
			}
		})
	}
}
