package render

import (
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Cookie affinity of an HTTP backend (model.CookieAffinity, an Ingress's
// affinity: cookie): HAProxy inserts the cookie into the first answer a
// client gets, its value the name of the server slot that answered
// (`cookie sN` on every slot, free ones included, so that a server
// placed in a slot at runtime answers to the slot's value: HAProxy 2.6
// cannot set a server's cookie at runtime), and sends a request carrying
// it to that slot while it serves (`indirect`: the Pod never sees it;
// `nocache`: shared caches are told not to keep an answer that sets it).
// Settings the validator refuses: no cookie (the backend balances).

// writeCookie writes be's cookie line, if it has a valid one.
func writeCookie(w func(...string), be *model.Backend) {
	c := be.Cookie
	if !be.HTTP || !model.ValidCookieAffinity(c) {
		return
	}
	line := "\tcookie " + c.Name + " insert indirect nocache httponly"
	if c.Secure {
		line += " secure"
	}
	if c.MaxAge > 0 {
		line += " attr Max-Age=" + strconv.Itoa(c.MaxAge)
	}
	if c.SameSite != "" {
		line += " attr SameSite=" + c.SameSite
	}
	if c.Domain != "" {
		line += " domain " + c.Domain
	}
	if c.Path != "" {
		line += " attr Path=" + c.Path
	}
	w(line)
}

// slotCookie is what a slot's server line carries for be's cookie.
func slotCookie(be *model.Backend, slot string) string {
	if !be.HTTP || !model.ValidCookieAffinity(be.Cookie) {
		return ""
	}
	return " cookie " + slot
}
