package ingress

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// The annotations that change what a path does with a request, each
// compiled into the route model's map data (model.HTTPActionExt, a
// Redirect) or a backend's protocol: rewrite-target (with use-regex's
// capture groups in the forms that amount to a prefix), app-root,
// permanent-redirect, temporal-redirect and HAProxy Ingress's
// redirect-to, proxy-read-timeout/proxy-send-timeout and timeout-server,
// backend-protocol.

// HAProxyOldPrefix is HAProxy Ingress's older prefix: a key under it is
// read as the same key under HAProxyPrefix.
const HAProxyOldPrefix = "ingress.kubernetes.io/"

// canonicalKey is key with HAProxyOldPrefix read as HAProxyPrefix.
func canonicalKey(key string) string {
	if rest, ok := strings.CutPrefix(key, HAProxyOldPrefix); ok {
		return HAProxyPrefix + rest
	}
	return key
}

// routing are the annotations of this file, checked.
type routing struct {
	rewrite      string // rewrite-target: a path, or "R/$N"
	rewritePfx   bool   // HAProxy Ingress's rewrite-target: the path matched replaced
	useRegex     bool
	appRoot      string
	redirectURL  *url.URL // permanent-redirect, temporal-redirect, redirect-to
	redirectCode int
	permCode     int // permanent-redirect-code (0: 301)
	tempCode     int // temporal-redirect-code (0: 302)
	temporal     bool
	timeout      time.Duration
	connect      time.Duration // proxy-connect-timeout, timeout-connect: the backends' (connect.go); 0: the defaults' 5 s
	connectNginx bool          // connect read from proxy-connect-timeout
	connectReq   time.Duration // connect set per request, the paths' (connect.go); 0: none
	h2c          bool          // backend-protocol GRPC, H2C, h2 (and GRPCS, h2-ssl: over TLS)
}

// maxTimeout bounds a timeout annotation.
const maxTimeout = 24 * time.Hour

// haproxyTime is a HAProxy time value: digits and a unit (ms when none).
var haproxyTime = regexp.MustCompile(`^([0-9]{1,9})(us|ms|s|m|h|d)?$`)

// parseRouting reads key (canonical; name without its prefix) into s
// when it is one of this file's: done is false for the others, why says
// what is wrong with a malformed value.
func (s *parsed) parseRouting(key, name, val string) (why string, done bool) {
	nginx := strings.HasPrefix(key, NginxPrefix)
	switch name {
	case "rewrite-target":
		if val == "" {
			return "empty", true
		}
		s.rewrite, s.rewritePfx = val, !nginx
		if !nginx && !model.ValidHTTPPath(val) {
			return settings.ShowValue(val) + " is not an absolute path of URL characters", true
		}
	case "use-regex":
		b, err := strconv.ParseBool(val)
		if err != nil {
			return settings.ShowValue(val) + " is not true or false", true
		}
		s.useRegex = b
	case "app-root":
		if !model.ValidHTTPPath(val) || val == "/" {
			return settings.ShowValue(val) + " is not an absolute path of URL characters other than /", true
		}
		s.appRoot = val
	case "permanent-redirect", "temporal-redirect", "redirect-to":
		u, why := redirectURL(val)
		if why != "" {
			return why, true
		}
		if name == "temporal-redirect" || s.redirectURL == nil || !s.temporal {
			// ingress-nginx reads temporal-redirect first.
			s.redirectURL, s.temporal = u, name != "permanent-redirect"
		}
	case "permanent-redirect-code", "temporal-redirect-code":
		n, err := strconv.Atoi(val)
		if err != nil || n < 300 || n > 308 {
			return settings.ShowValue(val) + " is not a redirect status code", true
		}
		if !validCode(n) {
			return strconv.Itoa(n) + " is not served: 301, 302, 303, 307 or 308", true
		}
		if name == "permanent-redirect-code" {
			s.permCode = n
		} else {
			s.tempCode = n
		}
	case "proxy-read-timeout", "proxy-send-timeout":
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || time.Duration(n)*time.Second > maxTimeout {
			return settings.ShowValue(val) + " is not a whole number of seconds from 1 to 86400", true
		}
		// HAProxy's server timeout bounds both the wait to read and to
		// send: the longer of the two.
		s.timeout = max(s.timeout, time.Duration(n)*time.Second)
	case "timeout-server":
		d, why := parseHAProxyTime(val)
		if why != "" {
			return why, true
		}
		s.timeout = d
	case "proxy-connect-timeout", "timeout-connect":
		return s.parseConnect(name, val), true // connect.go
	case "backend-protocol":
		switch {
		case nginx && strings.EqualFold(val, "HTTP"), !nginx && val == "h1":
		case nginx && (strings.EqualFold(val, "GRPC") || strings.EqualFold(val, "H2C")), !nginx && val == "h2":
			s.h2c = true
		case nginx && (strings.EqualFold(val, "HTTPS") || strings.EqualFold(val, "GRPCS")), !nginx && (val == "h1-ssl" || val == "h2-ssl"):
			// TLS to the Pods (backendtls.go); GRPCS and h2-ssl HTTP/2 over it.
			s.btls.on, s.btls.nginx = true, s.btls.nginx || nginx
			s.h2c = s.h2c || strings.EqualFold(val, "GRPCS") || val == "h2-ssl"
		default:
			return settings.ShowValue(val) + " is not served (HTTP, HTTPS, GRPC, GRPCS or H2C; h1, h2, h1-ssl or h2-ssl)", true
		}
	default:
		return "", false
	}
	return "", true
}

// parseHAProxyTime reads a HAProxy time from 1ms to 24h.
func parseHAProxyTime(val string) (time.Duration, string) {
	m := haproxyTime.FindStringSubmatch(val)
	if m == nil {
		return 0, settings.ShowValue(val) + " is not a HAProxy time (digits and us, ms, s, m, h or d)"
	}
	n, _ := strconv.Atoi(m[1])
	unit := map[string]time.Duration{"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[m[2]]
	d := time.Duration(n) * unit
	if d < time.Millisecond || d > maxTimeout {
		return 0, settings.ShowValue(val) + " is not from 1ms to 24h"
	}
	return d, ""
}

// finishRouting sets what depends on more than one key ("" or why the
// Ingress is refused).
func (s *parsed) finishRouting() string {
	if s.redirectURL != nil {
		s.redirectCode = 301
		if s.temporal {
			s.redirectCode = 302
		}
		switch {
		case s.temporal && s.tempCode != 0:
			s.redirectCode = s.tempCode
		case !s.temporal && s.permCode != 0:
			s.redirectCode = s.permCode
		}
	}
	return ""
}

// printable reports whether v is visible ASCII.
func printable(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] >= 0x7f {
			return false
		}
	}
	return true
}

func validCode(n int) bool {
	for _, c := range model.RedirectCodes {
		if c == n {
			return true
		}
	}
	return false
}

// redirectURL checks a redirect's target: an absolute http or https URL
// whose host is a name and whose path (if any) is clean, without a
// query, fragment or user.
func redirectURL(v string) (*url.URL, string) {
	u, err := url.Parse(v)
	bad := settings.ShowValue(v) + " is not an http or https URL of a host name and a path, without a query or fragment"
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.ContainsAny(v, "#?") || !printable(v) {
		return nil, bad
	}
	h := strings.ToLower(u.Hostname())
	if !model.ValidSNI(h) || strings.HasPrefix(h, "*") {
		return nil, bad
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, bad
		}
	}
	if u.EscapedPath() != "" && !model.ValidHTTPPath(u.EscapedPath()) {
		return nil, bad
	}
	return u, ""
}

// regexPath reads an ingress-nginx regular expression path (use-regex,
// or rewrite-target) as the element-wise prefix it amounts to: P(/|$)(.*)
// (the rest of the path in $2), P/(.*) ($1) or P/.* (no group), P of
// letters, digits, '/', '-', '_', '~' and escaped dots; a path without
// regular expression syntax is itself. ok is false for anything else,
// which HAProxy's map lookups could not serve as the regex means it.
func regexPath(p string) (prefix string, group int, ok bool) {
	if !strings.ContainsAny(p, `*+?()[]{}|^$\`) {
		return p, 0, true
	}
	for _, f := range []struct {
		suffix string
		group  int
	}{{"(/|$)(.*)", 2}, {"/(.*)", 1}, {"/.*", 0}} {
		head, found := strings.CutSuffix(p, f.suffix)
		if !found {
			continue
		}
		lit, ok := literal(head)
		if !ok || (head == "" && f.group == 2) {
			return "", 0, false
		}
		if lit == "" {
			lit = "/"
		}
		return lit, f.group, model.ValidHTTPPath(lit)
	}
	return "", 0, false
}

// literal is a regex of plain characters and escaped dots as the text it
// matches; ok is false when it has any other syntax.
func literal(re string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(re); i++ {
		c := re[i]
		switch {
		case c == '\\' && i+1 < len(re) && re[i+1] == '.':
			b.WriteByte('.')
			i++
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("/-_~", c) >= 0:
			b.WriteByte(c)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// pathRoute is what one path of the Ingress does beyond its backend:
// ext (rewrite, timeout) and redirect (nil: none); why says why the
// path cannot be served as the annotations mean it. value is the path
// as matched (a regex's prefix), group the capture group of its rest.
func (s *parsed) pathRoute(typ, value string, group int) (ext *model.HTTPActionExt, rd *model.Redirect, why string) {
	if u := s.redirectURL; u != nil {
		rd = &model.Redirect{Scheme: u.Scheme, Host: strings.ToLower(u.Hostname()), Code: s.redirectCode}
		if p := u.Port(); p != "" {
			n, _ := strconv.Atoi(p)
			rd.Port = uint16(n)
		}
		path := u.EscapedPath()
		if path == "" {
			path = "/"
		}
		return &model.HTTPActionExt{Path: &model.PathRewrite{Replace: path}}, rd, ""
	}
	if s.rewrite == "" && s.timeout == 0 && s.connectReq == 0 {
		return nil, nil, ""
	}
	x := &model.HTTPActionExt{Timeout: s.timeout, Connect: s.connectReq}
	switch t := s.rewrite; {
	case t == "":
	case s.rewritePfx && typ == model.PathPrefix:
		n := model.PrefixSegments(value)
		if n > model.RewriteDepth {
			return nil, nil, "path " + settings.ShowValue(value) + " has more than " + strconv.Itoa(model.RewriteDepth) + " segments to rewrite"
		}
		x.Path = &model.PathRewrite{Replace: t, Prefix: true, Strip: n}
	case !strings.Contains(t, "$"):
		if !model.ValidHTTPPath(t) {
			return nil, nil, "rewrite-target " + settings.ShowValue(t) + " is not an absolute path of URL characters"
		}
		x.Path = &model.PathRewrite{Replace: t}
	default:
		head, ok := strings.CutSuffix(t, "/$"+strconv.Itoa(group))
		if !ok || group == 0 || strings.Contains(head, "$") || (head != "" && !model.ValidHTTPPath(head)) {
			return nil, nil, "rewrite-target " + settings.ShowValue(t) + " on path " + settings.ShowValue(value) +
				": only a path, or PATH/$N where $N is the rest of a path written P(/|$)(.*) ($2) or P/(.*) ($1), is served"
		}
		n := model.PrefixSegments(value)
		if n > model.RewriteDepth {
			return nil, nil, "path " + settings.ShowValue(value) + " has more than " + strconv.Itoa(model.RewriteDepth) + " segments to rewrite"
		}
		x.Path = &model.PathRewrite{Replace: head + "/", Prefix: true, Strip: n}
	}
	if x.Path == nil && x.Timeout == 0 && x.Connect == 0 {
		return nil, nil, ""
	}
	return x, nil, ""
}

// appRoots are app-root's redirects: "/" of each host the paths name
// answered 302 to root, on the request's scheme and host, ahead of the
// Ingress's own paths (ingress-nginx's app-root).
func appRoots(paths []path, root string) []path {
	if root == "" {
		return nil
	}
	var out []path
	seen := map[string]bool{}
	for _, p := range paths {
		if seen[p.host] {
			continue
		}
		seen[p.host] = true
		out = append(out, path{host: p.host, typ: model.PathExact, value: "/", idx: -1, backend: p.backend,
			redirect: &model.Redirect{Code: 302}, ext: &model.HTTPActionExt{Path: &model.PathRewrite{Replace: root}}})
	}
	return out
}

// closing are the keys that restrict who is served and are not served
// yet (none now: the source ranges, basic and external authentication,
// HAProxy Ingress's oauth and the client certificates' subjects are
// served, access.go, auth.go, extauth.go, hiextauth.go, oauth.go,
// authtls.go): an Ingress served without one would be open to whom it
// shuts out, so such a key refuses the Ingress (its last good version
// keeps serving) rather than serve it without.
var closing []string
