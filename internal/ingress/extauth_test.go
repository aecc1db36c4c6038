package ingress

import (
	"cmp"
	"reflect"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func TestExtAuthAnnotations(t *testing.T) {
	const u = NginxPrefix + "auth-url"
	for _, tc := range []struct {
		name    string
		a       map[string]string
		want    *model.ExtAuth
		refused string // a part of why the Ingress is refused
	}{
		{"none", map[string]string{}, nil, ""},
		{"url alone: GET", map[string]string{u: "http://auth.example.com/check"},
			&model.ExtAuth{Method: "GET", URL: "http://auth.example.com/check"}, ""},
		{"every key", map[string]string{u: " https://10.0.0.1:8443/a?b=c ", NginxPrefix + "auth-method": "post",
			NginxPrefix + "auth-response-headers": "X-User, x-email,X-User", NginxPrefix + "auth-signin": "https://login.example/start"},
			&model.ExtAuth{Method: "POST", URL: "https://10.0.0.1:8443/a?b=c", Headers: []string{"x-email", "x-user"}, SignIn: "https://login.example/start"}, ""},
		{"nginx variables (oauth2-proxy's form)", map[string]string{u: "https://$host/oauth2/auth", NginxPrefix + "auth-signin": "https://$host/oauth2/start?rd=$escaped_request_uri"},
			&model.ExtAuth{Method: "GET", URL: "https://$host/oauth2/auth", SignIn: "https://$host/oauth2/start?rd=$escaped_request_uri"}, ""},
		{"an nginx variable we do not expand", map[string]string{u: "https://$host/oauth2/auth?x=$ssl_client_s_dn"}, nil, "$ssl_client_s_dn is not one of"},
		{"a sign-in with one", map[string]string{u: "https://a.example/", NginxPrefix + "auth-signin": "https://$hostname/"}, nil, "$hostname is not one of"},
		{"a newline", map[string]string{u: "http://a.example/x\n\tglobal"}, nil, "visible ASCII"},
		{"another scheme", map[string]string{u: "file:///etc/passwd"}, nil, "http or https"},
		{"a method we do not have", map[string]string{u: "http://a.example/", NginxPrefix + "auth-method": "PATCH"}, nil, "is not one of"},
		{"a header that is not a name", map[string]string{u: "http://a.example/", NginxPrefix + "auth-response-headers": "x-a,x b"}, nil, "not a header name"},
		{"a bad sign-in", map[string]string{u: "http://a.example/", NginxPrefix + "auth-signin": "login"}, nil, "http or https"},
		{"sign-in without url", map[string]string{NginxPrefix + "auth-signin": "https://login.example/"}, nil, "without auth-url"},
		{"both projects' keys", map[string]string{u: "http://a.example/", HAProxyPrefix + "auth-url": "http://a.example/"}, nil, "mixed"},
	} {
		checkExtAuth(t, tc.name, tc.a, tc.want, tc.refused)
	}
}

// checkExtAuth reads the annotations a: the Ingress refused saying
// refused when it is not "", else its external authentication (in the
// namespace "default") want, valid.
func checkExtAuth(t *testing.T, name string, a map[string]string, want *model.ExtAuth, refused string) {
	t.Helper()
	s, _, why := parseAnnotations(a)
	switch {
	case refused != "" && !strings.Contains(why, refused):
		t.Errorf("%s: refused %q, want it to say %q", name, why, refused)
	case refused != "":
	case why != "":
		t.Errorf("%s: refused %q", name, why)
	default:
		got := s.auth.ext.model("default")
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
		if got != nil && !model.ValidExtAuth(got) {
			t.Errorf("%s: %+v is not valid", name, got)
		}
	}
}

func TestAuthService(t *testing.T) {
	for _, tc := range []struct {
		url, svc, ns string // ns: the Service's namespace, "" for the Ingress's
		port         int32
		sni          string // over https: the name sent, unverified; "": clear
		warn         bool
	}{
		{"http://oauth2-proxy.default.svc.cluster.local:4180/oauth2/auth", "oauth2-proxy", "", 4180, "", false},
		{"http://auth.default.svc/check", "auth", "", 80, "", false},
		{"http://AUTH.default.SVC./check", "auth", "", 80, "", false},
		{"http://oauth2-proxy.auth.svc.cluster.local:4180/oauth2/auth", "oauth2-proxy", "auth", 4180, "", false}, // another namespace: as ingress-nginx
		{"https://auth.default.svc/check", "auth", "", 443, "auth.default.svc", false},
		{"https://Auth.Other.svc.cluster.local.:8443/check", "auth", "other", 8443, "auth.other.svc.cluster.local", false},
		{"http://default.svc/check", "", "", 0, "", true},
		{"https://default.svc/check", "", "", 0, "", true},
		{"http://a.b.default.svc/check", "", "", 0, "", true},
		{"http://10.0.0.1/auth", "", "", 0, "", false},
		{"https://auth.example.com/check", "", "", 0, "", false},
		{"http://svc.example.com/check", "", "", 0, "", false},
	} {
		b, sns, tls, why := authService(tc.url, "default")
		if (why != "") != tc.warn {
			t.Errorf("%s: warning %q, want one: %v", tc.url, why, tc.warn)
		}
		switch {
		case tc.svc == "" && (b != nil || tls != nil):
			t.Errorf("%s: Service %+v (TLS %+v), want none", tc.url, b, tls)
		case tc.svc != "" && (b == nil || b.Service.Name != tc.svc || b.Service.Port.Number != tc.port || sns != cmp.Or(tc.ns, "default")):
			t.Errorf("%s: %+v in %q, want %s:%d in %q", tc.url, b, sns, tc.svc, tc.port, cmp.Or(tc.ns, "default"))
		case tc.svc != "" && tc.sni == "" && tls != nil:
			t.Errorf("%s: TLS %+v, want clear", tc.url, tls)
		case tc.sni != "" && (tls == nil || tls.SNI != tc.sni || !tls.NoVerify || !model.ValidBackendTLS(tls)):
			t.Errorf("%s: TLS %+v, want SNI %q unverified", tc.url, tls, tc.sni)
		}
	}
}
