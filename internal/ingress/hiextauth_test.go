package ingress

import (
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func TestHIExtAuthAnnotations(t *testing.T) {
	const h = HAProxyPrefix
	all := []string{"*"}
	for _, tc := range []struct {
		name    string
		a       map[string]string
		want    *model.ExtAuth
		refused string // a part of why the Ingress is refused
	}{
		{"url alone: every header, the failure as it is", map[string]string{h + "auth-url": "http://auth.example.com/check"},
			&model.ExtAuth{Method: "GET", URL: "http://auth.example.com/check", Pass: all, Fail: all}, ""},
		{"the older prefix", map[string]string{HAProxyOldPrefix + "auth-url": "https://10.0.0.2/auth"},
			&model.ExtAuth{Method: "GET", URL: "https://10.0.0.2/auth", Pass: all, Fail: all}, ""},
		{"a Service of the Ingress's namespace", map[string]string{h + "auth-url": "svc://auth-cluster:8443/auth"},
			&model.ExtAuth{Method: "GET", URL: "http://auth-cluster.default.svc:8443/auth", Pass: all, Fail: all}, ""},
		{"service:// of another namespace, no path", map[string]string{h + "auth-url": "service://auth/oauth2-proxy:4180"},
			&model.ExtAuth{Method: "GET", URL: "http://oauth2-proxy.auth.svc:4180/", Pass: all, Fail: all}, ""},
		{"every key", map[string]string{h + "auth-url": "http://a.example/", h + "auth-method": "*",
			h + "auth-headers-request": "X-*, Authorization", h + "auth-headers-succeed": "X-Token,X-User-*", h + "auth-headers-fail": "-",
			h + "auth-signin": "https://login.example/start?rd=https://%[hdr(host)]%[path]&x=%%"},
			&model.ExtAuth{Method: "*", URL: "http://a.example/", Send: []string{"x-*", "authorization"}, Pass: []string{"x-token", "x-user-*"},
				Fail: []string{"-"}, SignIn: "https://login.example/start?rd=https://$http_host$uri&x=%", SignInAny: true}, ""},
		{"no header anywhere", map[string]string{h + "auth-url": "http://a.example/", h + "auth-headers-request": "",
			h + "auth-headers-succeed": "-", h + "auth-headers-fail": " - "},
			&model.ExtAuth{Method: "GET", URL: "http://a.example/", Send: []string{"-"}, Fail: []string{"-"}}, ""},
		{"a svc without a port", map[string]string{h + "auth-url": "svc://auth/check"}, nil, "port number"},
		{"a svc name that is not one", map[string]string{h + "auth-url": "svc://Auth_x:80/"}, nil, "not a Service name"},
		{"a namespace that is not one", map[string]string{h + "auth-url": "svc://a.b/auth:80/"}, nil, "not a namespace"},
		{"an nginx variable", map[string]string{h + "auth-url": "https://$host/auth"}, nil, "'$'"},
		{"another scheme", map[string]string{h + "auth-url": "file:///etc/passwd"}, nil, "http or https"},
		{"a newline", map[string]string{h + "auth-url": "http://a.example/x\n\tglobal"}, nil, "visible ASCII"},
		{"a method", map[string]string{h + "auth-url": "http://a.example/", h + "auth-method": "PATCH"}, nil, "is not * or one of"},
		{"a header pattern with a space", map[string]string{h + "auth-url": "http://a.example/", h + "auth-headers-succeed": "x-a,x b"}, nil, "not a header name"},
		{"a header pattern with a bracket", map[string]string{h + "auth-url": "http://a.example/", h + "auth-headers-request": "x-[a]"}, nil, "not a header name"},
		{"a sample not read", map[string]string{h + "auth-url": "http://a.example/", h + "auth-signin": "https://l.example/?rd=%[req.cook(a)]"}, nil, "is not one of the samples"},
		{"a log-format variable", map[string]string{h + "auth-url": "http://a.example/", h + "auth-signin": "https://l.example/%T"}, nil, "log-format"},
		{"an unclosed sample", map[string]string{h + "auth-url": "http://a.example/", h + "auth-signin": "https://l.example/%[path"}, nil, "without ]"},
		{"a sign-in that is no URL", map[string]string{h + "auth-url": "http://a.example/", h + "auth-signin": "login"}, nil, "http or https"},
		{"a key without auth-url", map[string]string{h + "auth-headers-fail": "x-a"}, nil, "without auth-url"},
	} {
		checkExtAuth(t, tc.name, tc.a, tc.want, tc.refused) // extauth_test.go
	}
}
