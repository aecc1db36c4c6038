package model

import (
	"strings"
	"testing"
)

func TestExtAuthURLProblem(t *testing.T) {
	for _, tc := range []struct {
		url, want string // want: a part of the problem, "" for none
	}{
		{"http://auth.example.com/check", ""},
		{"https://auth.example.com:8443/check?x=1&y=%20", ""},
		{"http://10.0.0.1:9000", ""},
		{"http://[2001:db8::1]:80/a", ""},
		{"http://svc.ns.svc.cluster.local/auth", ""},
		{"", "empty"},
		{"ftp://a.example/", "http or https"},
		{"auth.example.com/check", "http or https"},
		{"http:///check", "no host"},
		{"http://user:pw@a.example/", "user information"},
		{"http://a.example:0/", "port"},
		{"http://a.example:70000/", "port"},
		{"http://a_b.example/", "not a DNS name"},
		{"http://-a.example/", "not a DNS name"},
		{"http://a.example/x y", "visible ASCII"},
		{"http://a.example/x\nglobal", "visible ASCII"},
		{"http://a.example/x;y", "visible ASCII"},
		{"http://a.example/#frag", "visible ASCII"},
		{"http://a.example/a|b", "visible ASCII"},
		{"http://a.example/" + strings.Repeat("a", 2048), "longer"},
	} {
		got := ExtAuthURLProblem(tc.url)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("ExtAuthURLProblem(%.40q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

func TestValidExtAuth(t *testing.T) {
	ok := ExtAuth{Method: "GET", URL: "http://a.example/auth", Headers: []string{"x-user"}, SignIn: "https://login.example/"}
	for _, tc := range []struct {
		name string
		edit func(a *ExtAuth)
		want bool
	}{
		{"valid", func(*ExtAuth) {}, true},
		{"no sign-in, no headers", func(a *ExtAuth) { a.SignIn, a.Headers = "", nil }, true},
		{"POST", func(a *ExtAuth) { a.Method = "POST" }, true},
		{"lower-case method", func(a *ExtAuth) { a.Method = "get" }, false},
		{"PATCH", func(a *ExtAuth) { a.Method = "PATCH" }, false},
		{"bad URL", func(a *ExtAuth) { a.URL = "gopher://a.example/" }, false},
		{"bad sign-in", func(a *ExtAuth) { a.SignIn = "https://a.example/x y" }, false},
		{"a sign-in on the request's host (oauth)", func(a *ExtAuth) { a.SignIn = "/oauth2/start?rd=$uri" }, true},
		{"a sign-in on another host without a scheme", func(a *ExtAuth) { a.SignIn = "//evil.example/start" }, false},
		{"a relative sign-in with a space", func(a *ExtAuth) { a.SignIn = "/oauth2/x y" }, false},
		{"a relative sign-in that is no path", func(a *ExtAuth) { a.SignIn = "oauth2/start" }, false},
		{"header with a comma", func(a *ExtAuth) { a.Headers = []string{"x-a,x-b"} }, false},
		{"header in capitals", func(a *ExtAuth) { a.Headers = []string{"X-User"} }, false},
		{"a header set from another (oauth-headers' rename)", func(a *ExtAuth) { a.Headers = []string{"x-mail:x-auth-request-email"} }, true},
		{"a rename from itself", func(a *ExtAuth) { a.Headers = []string{"x-user:x-user"} }, false},
		{"a rename from nothing", func(a *ExtAuth) { a.Headers = []string{"x-user:"} }, false},
		{"a rename of two colons", func(a *ExtAuth) { a.Headers = []string{"x-a:x-b:x-c"} }, false},
		{"a rename from a source in capitals", func(a *ExtAuth) { a.Headers = []string{"x-a:X-B"} }, false},
		{"a backend", func(a *ExtAuth) { a.Backend = "ing_default_auth_80" }, true},
		{"a backend that is no name", func(a *ExtAuth) { a.Backend = "ing default" }, false},
		{"the client's method", func(a *ExtAuth) { a.Method = ExtAuthSameMethod }, true},
		{"HAProxy Ingress's patterns", func(a *ExtAuth) {
			a.Send, a.Pass, a.Fail, a.SignInAny = []string{"x-*", "authorization"}, []string{"x-user-?"}, []string{ExtAuthNone}, true
		}, true},
		{"a pattern with a comma", func(a *ExtAuth) { a.Send = []string{"x-a,x-b"} }, false},
		{"a pattern with a newline", func(a *ExtAuth) { a.Fail = []string{"x\n"} }, false},
		{"a pattern in capitals", func(a *ExtAuth) { a.Pass = []string{"X-*"} }, false},
		{"none beside a name", func(a *ExtAuth) { a.Send = []string{ExtAuthNone, "x-a"} }, false},
		{"none passed on success", func(a *ExtAuth) { a.Pass = []string{ExtAuthNone} }, false},
	} {
		a := ok
		a.Headers = append([]string(nil), ok.Headers...)
		tc.edit(&a)
		if got := ValidExtAuth(&a); got != tc.want {
			t.Errorf("%s: ValidExtAuth = %v, want %v", tc.name, got, tc.want)
		}
	}
	if ValidExtAuth(nil) {
		t.Error("ValidExtAuth(nil) = true")
	}
	if got, want := ok.Spec(), "GET\nhttp://a.example/auth\nx-user\nhttps://login.example/\n"; got != want {
		t.Errorf("Spec = %q, want %q", got, want)
	}
	hi := ExtAuth{Method: "*", URL: "http://a.example/auth", Send: []string{"x-*"}, Pass: []string{"*"}, Fail: []string{ExtAuthNone}, SignIn: "https://l.example/", SignInAny: true}
	if got, want := hi.Spec(), "*\nhttp://a.example/auth\n\nhttps://l.example/\n\nx-*\n*\n-\n1"; got != want {
		t.Errorf("Spec = %q, want %q", got, want)
	}
	if b := hi; extAuthEqual(&hi, &b) != true || func() bool { b.Send = nil; return extAuthEqual(&hi, &b) }() {
		t.Error("extAuthEqual does not tell the request headers sent apart")
	}
}

// TestExtAuthURLVariables: nginx variables, $name or ${name}, known ones
// or of a family, are allowed where their sample value keeps the URL
// valid; an unknown one, a lone '$' or an unclosed "${" is a problem.
func TestExtAuthURLVariables(t *testing.T) {
	for _, tc := range []struct {
		url, want string // want: a part of the problem, "" for none
	}{
		{"https://$host/oauth2/start?rd=$escaped_request_uri", ""},
		{"https://$host/oauth2/auth", ""},
		{"$scheme://$host:$server_port/start?rd=$scheme://$http_host$request_uri", ""},
		{"https://login.example/${host}/x?u=$uri$is_args$args&m=$request_method&a=$remote_addr", ""},
		{"https://login.example/?t=$http_x_token&q=$arg_page&c=$cookie_session&h=$best_http_host&d=$document_uri&q2=$query_string", ""},
		{"https://$nonsense/auth", "$nonsense is not one of"},
		{"https://a.example/?x=$HOST", "starts no variable"},
		{"https://a.example/?x=$", "starts no variable"},
		{"https://a.example/?x=${host", "closing"},
		{"https://a.example/?x=$http_", "$http_ is not one of"},
		{"https://$host.evil/ x", "visible ASCII"},
		{"https://$remote_addr:$host/", "not a URL"},
	} {
		got := ExtAuthURLProblem(tc.url)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("ExtAuthURLProblem(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}
