package ingress

import (
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// HAProxy Ingress's external authentication (auth-url, auth-method,
// auth-headers-request, auth-headers-succeed, auth-headers-fail,
// auth-signin), read into the same extAuthAnnotations as ingress-nginx's
// keys (extauth.go) and so into the same model.ExtAuth: its meaning
// differs only in the settings the model carries (which request headers
// are sent, which answer headers pass, a failure's answer passed to the
// client as it is, the sign-in URL taking every failure as written).

// hiSignInSamples are the HAProxy samples a HAProxy Ingress auth-signin
// (a log-format string) may hold, as the nginx variables the Lua action
// expands (model/extauthvars.go): the request's host, path and query,
// what sign-in URLs are built from. Any other %[...] refuses the
// Ingress.
var hiSignInSamples = map[string]string{
	"hdr(host)":          "$http_host",
	"req.hdr(host)":      "$http_host",
	"path":               "$uri",
	"query":              "$args",
	"url":                "$request_uri",
	"capture.req.uri":    "$request_uri",
	"base":               "$http_host$uri",
	"src":                "$remote_addr",
	"url,url_enc":        "$escaped_request_uri",
	"capture.req.method": "$request_method",
}

// parseHIExtAuth reads HAProxy Ingress's external authentication key
// name into a: done is false for the others.
func (a *extAuthAnnotations) parseHIExtAuth(name, val string) (why string, done bool) {
	if why, done := a.oauth.parseOAuth(name, val); done { // oauth.go
		return why, true
	}
	switch name {
	case "auth-url":
		u, svc, why := hiAuthURL(val)
		if why != "" {
			return why, true
		}
		a.url, a.sameNS = u, svc
	case "auth-method":
		m := strings.ToUpper(val)
		if m != model.ExtAuthSameMethod && !slices.Contains(model.ExtAuthMethods, m) {
			return settings.ShowValue(val) + " is not * or one of " + strings.Join(model.ExtAuthMethods, ", "), true
		}
		a.method = m
	case "auth-headers-request", "auth-headers-succeed", "auth-headers-fail":
		ps, why := parseHeaderPatterns(val)
		if why != "" {
			return why, true
		}
		switch name {
		case "auth-headers-request":
			a.send = ps
		case "auth-headers-succeed":
			a.pass = ps
		default:
			a.fail = ps
		}
	case "auth-signin":
		u, why := hiSignIn(val)
		if why != "" {
			return why, true
		}
		a.signin = u
	default:
		return "", false
	}
	a.hi = true
	if name != "auth-url" && a.given == "" {
		a.given = HAProxyPrefix + name
	}
	return "", true
}

// hiModel sets HAProxy Ingress's defaults on m: every header of the
// auth server's answer passes (on 2xx to the request, otherwise to the
// client with its status and body), unless the keys name others; a
// sign-in URL takes every failure, as written.
func (a *extAuthAnnotations) hiModel(m *model.ExtAuth) {
	m.Send = a.send
	m.Pass, m.Fail = []string{"*"}, []string{"*"}
	if a.pass != nil {
		m.Pass = a.pass
	}
	if a.fail != nil {
		m.Fail = a.fail
	}
	if len(m.Pass) == 1 && m.Pass[0] == model.ExtAuthNone {
		m.Pass = nil
	}
	m.SignInAny = m.SignIn != ""
}

// parseHeaderPatterns reads a comma separated list of header name
// patterns ('*' and '?' wildcards), lower case, each once; "-" or an
// empty value: none (model.ExtAuthNone).
func parseHeaderPatterns(val string) ([]string, string) {
	out, why := headerList(val, model.ValidHeaderPattern, " is not a header name (with * and ? wildcards)") // extauth.go
	if out == nil && why == "" {
		return []string{model.ExtAuthNone}, ""
	}
	return out, why
}

// hiAuthURL is HAProxy Ingress's auth-url as the model's URL: http and
// https as they are (no nginx variables: a '$' refuses), svc:// and
// service:// ([NAMESPACE/]NAME:PORT[/PATH], the port a number) as the
// Service's cluster name, which compileOne sends through HAProxy's own
// backend of it (authService). Without a namespace, sameNS is the
// Service's name and u the rest after NAME.NAMESPACE.svc (model puts the
// Ingress's namespace between).
func hiAuthURL(val string) (u, sameNS, why string) {
	if strings.Contains(val, "$") {
		return "", "", settings.ShowValue(val) + ": '$' is not part of a URL here"
	}
	rest, ok := strings.CutPrefix(val, "svc://")
	if !ok {
		rest, ok = strings.CutPrefix(val, "service://")
	}
	if !ok {
		return val, "", extAuthURLProblem(val)
	}
	ns := ""
	if i, j := strings.IndexByte(rest, '/'), strings.IndexByte(rest, ':'); i >= 0 && (j < 0 || i < j) {
		ns, rest = rest[:i], rest[i+1:]
		if len(validation.IsDNS1123Label(ns)) > 0 {
			return "", "", settings.ShowValue(val) + ": " + strconv.Quote(ns) + " is not a namespace"
		}
	}
	hostPort, path, _ := strings.Cut(rest, "/")
	name, port, ok := strings.Cut(hostPort, ":")
	if len(validation.IsDNS1035Label(name)) > 0 {
		return "", "", settings.ShowValue(val) + ": " + strconv.Quote(name) + " is not a Service name"
	}
	if n, err := strconv.Atoi(port); !ok || err != nil || n < 1 || n > 65535 {
		return "", "", settings.ShowValue(val) + ": a Service's port number (1-65535) is needed"
	}
	after := ".svc:" + port + "/" + path
	if ns != "" {
		u = "http://" + name + "." + ns + after
		return u, "", extAuthURLProblem(u)
	}
	// checked with the longest namespace in its place
	if why := extAuthURLProblem("http://" + name + "." + strings.Repeat("n", 63) + after); why != "" {
		return "", "", settings.ShowValue(val) + ": " + model.ExtAuthURLProblem("http://"+name+"."+strings.Repeat("n", 63)+after)
	}
	return after, name, ""
}

// hiSignIn is HAProxy Ingress's auth-signin, a log-format string, as the
// model's sign-in URL: its samples of hiSignInSamples as nginx
// variables, "%%" a '%'; any other '%', and '$', refuse the Ingress.
func hiSignIn(val string) (string, string) {
	var b strings.Builder
	for i := 0; i < len(val); i++ {
		c := val[i]
		switch {
		case c == '$':
			return "", settings.ShowValue(val) + ": '$' is not part of a URL here"
		case c == '%' && strings.HasPrefix(val[i:], "%%"):
			b.WriteByte('%')
			i++
		case c == '%' && strings.HasPrefix(val[i:], "%["):
			end := strings.IndexByte(val[i:], ']')
			if end < 0 {
				return "", settings.ShowValue(val) + ": %[ without ]"
			}
			v, ok := hiSignInSamples[val[i+2:i+end]]
			if !ok {
				return "", settings.ShowValue(val) + ": %[" + val[i+2:i+end] + "] is not one of the samples read here (" + hiSampleList() + ")"
			}
			b.WriteString(v)
			i += end
		case c == '%':
			return "", settings.ShowValue(val) + ": '%' starts a log-format item; only %[SAMPLE] of " + hiSampleList() + " and %% are read here"
		default:
			b.WriteByte(c)
		}
	}
	u := b.String()
	return u, extAuthURLProblem(u)
}

// hiSampleList names hiSignInSamples, sorted.
func hiSampleList() string {
	out := make([]string, 0, len(hiSignInSamples))
	for s := range hiSignInSamples {
		out = append(out, "%["+s+"]")
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
