package ingress

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Cookie affinity: ingress-nginx's affinity: cookie with affinity-mode,
// session-cookie-name, -max-age (and the older -expires), -secure,
// -samesite, -path, -domain; HAProxy Ingress's affinity: cookie, session-cookie-name and
// session-cookie-strategy: insert. The Ingress's backends carry a
// model.CookieAffinity (render/cookie.go): a backend of their own, named
// by the setting, so its first use is one reload (a cookie is
// structure: HAProxy's `cookie` line) and every later Ingress with the
// same setting none.

// DefaultCookie is the cookie's name when the Ingress names none (both
// projects').
const DefaultCookie = "INGRESSCOOKIE"

// cookieAnnotations are the affinity annotations, checked.
type cookieAnnotations struct {
	on       bool
	name     string
	maxAge   int // session-cookie-max-age
	expires  int // session-cookie-expires
	secure   bool
	sameSite string
	path     string // session-cookie-path
	domain   string // session-cookie-domain
}

// parseCookie reads key (canonical; name without its prefix) into s when
// it is an affinity key: done is false for the others.
func (s *parsed) parseCookie(key, name, val string) (why string, done bool) {
	c := &s.cookie
	seconds := func(dst *int) string {
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > model.MaxCookieAge {
			return settings.ShowValue(val) + " is not a whole number of seconds from 1 to " + strconv.Itoa(model.MaxCookieAge)
		}
		*dst = n
		return ""
	}
	switch name {
	case "affinity":
		if val != "cookie" {
			return settings.ShowValue(val) + " is not served (cookie only)", true
		}
		c.on = true
	case "affinity-mode":
		if val != "balanced" && val != "persistent" {
			return settings.ShowValue(val) + " is not balanced or persistent", true
		}
	case "session-cookie-name":
		if !model.ValidCookieName(val) {
			return settings.ShowValue(val) + " is not a cookie name of letters, digits, - and _ (at most 64)", true
		}
		c.name = val
	case "session-cookie-max-age":
		return seconds(&c.maxAge), true
	case "session-cookie-expires":
		return seconds(&c.expires), true
	case "session-cookie-secure":
		b, err := strconv.ParseBool(val)
		if err != nil {
			return settings.ShowValue(val) + " is not true or false", true
		}
		c.secure = b
	case "session-cookie-samesite":
		for _, v := range []string{"Strict", "Lax", "None"} {
			if strings.EqualFold(val, v) {
				c.sameSite = v
				return "", true
			}
		}
		return settings.ShowValue(val) + " is not Strict, Lax or None", true
	case "session-cookie-path":
		if !model.ValidHTTPPath(val) {
			return settings.ShowValue(val) + " is not an absolute path of URL characters", true
		}
		c.path = val
	case "session-cookie-domain":
		d := strings.ToLower(val)
		if !model.ValidCookieDomain(d) {
			return settings.ShowValue(val) + " is not a host name (a leading . allowed)", true
		}
		c.domain = d
	case "session-cookie-strategy":
		if val != "insert" {
			return settings.ShowValue(val) + " is not served (insert only)", true
		}
	default:
		return "", false
	}
	return "", true
}

// affinity is the Ingress's cookie affinity (nil: none) and its
// backends' name tag.
func (c *cookieAnnotations) affinity() (*model.CookieAffinity, string) {
	if !c.on {
		return nil, ""
	}
	a := &model.CookieAffinity{Name: c.name, MaxAge: c.maxAge, Secure: c.secure, SameSite: c.sameSite, Path: c.path, Domain: c.domain}
	if a.Name == "" {
		a.Name = DefaultCookie
	}
	if a.MaxAge == 0 {
		a.MaxAge = c.expires
	}
	parts := []string{a.Name, strconv.Itoa(a.MaxAge), strconv.FormatBool(a.Secure), a.SameSite}
	if a.Path != "" || a.Domain != "" {
		// Only then: the names of the backends without them stay.
		parts = append(parts, a.Path, a.Domain)
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "|")))
	return a, "c" + hex.EncodeToString(sum[:4])
}
