package ingress

import (
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// CORS: ingress-nginx's enable-cors and cors-* and HAProxy Ingress's
// cors-enable and cors-* annotations, compiled into the same policy as
// the HTTPRoute CORS filter (model.CORS: map data, a preflight answered
// by HAProxy). The defaults are each controller's own: origin "*",
// credentials true, methods GET, PUT, POST, DELETE, PATCH, OPTIONS, the
// usual request headers, a max age of 1728000 s (ingress-nginx) or
// 86400 s (HAProxy Ingress).

// corsAnnotations are the CORS annotations of an Ingress, read.
type corsAnnotations struct {
	enabled     bool
	nginx       bool // the key that enabled it was ingress-nginx's
	origins     []string
	methods     []string
	headers     []string
	expose      []string
	credentials *bool
	maxAge      int // 0: the default
}

const (
	corsDefaultMethods = "GET, PUT, POST, DELETE, PATCH, OPTIONS"
	corsDefaultHeaders = "DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization"
)

// corsKeys are the keys of this file, without their prefix.
var corsKeys = []string{"enable-cors", "cors-enable", "cors-allow-origin", "cors-allow-methods", "cors-allow-headers",
	"cors-expose-headers", "cors-allow-credentials", "cors-max-age"}

// corsList splits a comma-separated list (spaces around items ignored).
func corsList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// parseCORS reads key name (without its prefix) into c when it is a CORS
// key: done is false for the others, why says what is wrong.
func (c *corsAnnotations) parseCORS(name, val string, nginx bool) (why string, done bool) {
	switch name {
	case "enable-cors", "cors-enable":
		if nginx != (name == "enable-cors") {
			return "", false
		}
		b, err := strconv.ParseBool(val)
		if err != nil {
			return settings.ShowValue(val) + " is not true or false", true
		}
		c.enabled, c.nginx = b, nginx
	case "cors-allow-origin":
		c.origins = nil
		for _, o := range corsList(val) {
			c.origins = append(c.origins, strings.ToLower(o))
		}
	case "cors-allow-methods":
		c.methods = corsList(strings.ToUpper(val))
	case "cors-allow-headers", "cors-expose-headers":
		list := corsList(strings.ToLower(val))
		if name == "cors-allow-headers" {
			c.headers = list
		} else {
			c.expose = list
		}
	case "cors-allow-credentials":
		b, err := strconv.ParseBool(val)
		if err != nil {
			return settings.ShowValue(val) + " is not true or false", true
		}
		c.credentials = &b
	case "cors-max-age":
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > model.MaxCORSAge {
			return settings.ShowValue(val) + " is not a whole number of seconds from 1 to " + strconv.Itoa(model.MaxCORSAge), true
		}
		c.maxAge = n
	default:
		return "", false
	}
	return "", true
}

// policy is the Ingress's CORS policy (nil when not enabled) and why it
// cannot be served ("" when it can).
func (c *corsAnnotations) policy() (*model.CORS, string) {
	if !c.enabled {
		return nil, ""
	}
	p := &model.CORS{Origins: c.origins, Credentials: true, Methods: c.methods, Headers: c.headers, Expose: c.expose, MaxAge: c.maxAge}
	if len(p.Origins) == 0 {
		p.Origins = []string{model.AnyOrigin}
	}
	if p.Methods == nil {
		p.Methods = corsList(corsDefaultMethods)
	}
	if p.Headers == nil {
		p.Headers = corsList(strings.ToLower(corsDefaultHeaders))
	}
	if c.credentials != nil {
		p.Credentials = *c.credentials
	}
	if p.MaxAge == 0 {
		p.MaxAge = 86400
		if c.nginx {
			p.MaxAge = 1728000
		}
	}
	if why := p.Valid(); why != "" {
		return nil, "CORS: " + why
	}
	return p, ""
}

// withCORS is a path's extended features with the Ingress's CORS policy
// (none on a redirect: HAProxy answers it before any backend).
func withCORS(ext *model.HTTPActionExt, rd *model.Redirect, p *model.CORS) *model.HTTPActionExt {
	if p == nil || rd != nil {
		return ext
	}
	if ext == nil {
		return &model.HTTPActionExt{CORS: p}
	}
	x := *ext
	x.CORS = p
	return &x
}
