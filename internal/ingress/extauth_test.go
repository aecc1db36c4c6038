package ingress

import (
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
		{"an nginx variable", map[string]string{u: "https://$host/oauth2/auth"}, nil, "not expanded"},
		{"a newline", map[string]string{u: "http://a.example/x\n\tglobal"}, nil, "visible ASCII"},
		{"another scheme", map[string]string{u: "file:///etc/passwd"}, nil, "http or https"},
		{"a method we do not have", map[string]string{u: "http://a.example/", NginxPrefix + "auth-method": "PATCH"}, nil, "is not one of"},
		{"a header that is not a name", map[string]string{u: "http://a.example/", NginxPrefix + "auth-response-headers": "x-a,x b"}, nil, "not a header name"},
		{"a bad sign-in", map[string]string{u: "http://a.example/", NginxPrefix + "auth-signin": "login"}, nil, "http or https"},
		{"sign-in without url", map[string]string{NginxPrefix + "auth-signin": "https://login.example/"}, nil, "without auth-url"},
		{"HAProxy Ingress's auth-url still refused", map[string]string{HAProxyPrefix + "auth-url": "http://a.example/"}, nil, "refused"},
	} {
		s, _, refused := parseAnnotations(tc.a)
		if tc.refused != "" {
			if !strings.Contains(refused, tc.refused) {
				t.Errorf("%s: refused %q, want it to say %q", tc.name, refused, tc.refused)
			}
			continue
		}
		if refused != "" {
			t.Errorf("%s: refused %q", tc.name, refused)
			continue
		}
		if got := s.auth.ext.model(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestExtAuthClusterWarning(t *testing.T) {
	for _, tc := range []struct {
		url  string
		warn bool
	}{
		{"http://oauth2-proxy.auth.svc.cluster.local:4180/oauth2/auth", true},
		{"http://oauth2-proxy.auth.svc/oauth2/auth", true},
		{"https://AUTH.NS.SVC.cluster.example./x", true},
		{"http://10.0.0.1/auth", false},
		{"https://auth.example.com/check", false},
		{"http://svc.example.com/check", false},
	} {
		got := clusterWarning(&model.ExtAuth{Method: "GET", URL: tc.url})
		if (got != "") != tc.warn {
			t.Errorf("%s: warning %q, want one: %v", tc.url, got, tc.warn)
		}
	}
	if clusterWarning(nil) != "" {
		t.Error("a warning without external authentication")
	}
}
