package ingress

import (
	"fmt"
	"testing"
)

// TestParseCORS: the CORS annotations of both controllers as the policy
// of the Ingress's paths, each controller's defaults filled in; a value
// that could carry syntax refuses the Ingress.
func TestParseCORS(t *testing.T) {
	n, h := NginxPrefix, HAProxyPrefix
	for _, tc := range []struct {
		name string
		ann  map[string]string
		want string // the policy, or "refused"
	}{
		{"not enabled", map[string]string{n + "cors-allow-origin": "https://a.example"}, "<nil>"},
		{"ingress-nginx's defaults", map[string]string{n + "enable-cors": "true"},
			"&{Origins:[*] Credentials:true Methods:[GET PUT POST DELETE PATCH OPTIONS] Headers:[dnt keep-alive user-agent x-requested-with if-modified-since cache-control content-type range authorization] Expose:[] MaxAge:1728000}"},
		{"every key", map[string]string{n + "enable-cors": "true", n + "cors-allow-origin": "https://A.example, https://*.b.example:8443",
			n + "cors-allow-methods": "get, PUT", n + "cors-allow-headers": "X-A", n + "cors-expose-headers": "X-B,X-C",
			n + "cors-allow-credentials": "false", n + "cors-max-age": "60"},
			"&{Origins:[https://a.example https://*.b.example:8443] Credentials:false Methods:[GET PUT] Headers:[x-a] Expose:[x-b x-c] MaxAge:60}"},
		{"HAProxy Ingress's defaults", map[string]string{h + "cors-enable": "true"},
			"&{Origins:[*] Credentials:true Methods:[GET PUT POST DELETE PATCH OPTIONS] Headers:[dnt keep-alive user-agent x-requested-with if-modified-since cache-control content-type range authorization] Expose:[] MaxAge:86400}"},
		{"an origin with a path", map[string]string{n + "enable-cors": "true", n + "cors-allow-origin": "https://a.example/x"}, "refused"},
		{"an origin with a space", map[string]string{n + "enable-cors": "true", n + "cors-allow-origin": "https://a.example if"}, "refused"},
		{"a header with |", map[string]string{n + "enable-cors": "true", n + "cors-allow-headers": "x|y"}, "refused"},
		{"a method with ;", map[string]string{h + "cors-enable": "true", h + "cors-allow-methods": "GET;show"}, "refused"},
		{"an age that is no number", map[string]string{n + "enable-cors": "true", n + "cors-max-age": "1d"}, "refused"},
		{"enable not a boolean", map[string]string{n + "enable-cors": "yes please"}, "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, refused := parseAnnotations(tc.ann)
			got := "refused"
			if refused == "" {
				p, _ := s.cors.policy()
				got = fmt.Sprintf("%+v", p)
			}
			if got != tc.want {
				t.Fatalf("got %s (%s), want %s", got, refused, tc.want)
			}
		})
	}
}
