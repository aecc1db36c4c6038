package model

import (
	"regexp"
	"strings"
)

// hashedBalance are the balance algorithms by a request's property
// (an Ingress's upstream-hash-by): the URI (whole: with its query), a
// header (ValidHeaderName), a query parameter (ValidQueryName).
var hashedBalance = regexp.MustCompile(`^(uri|uri whole|hdr\([a-z0-9!$&*+\-.^_~]{1,128}\)|url_param [A-Za-z0-9._~-]{1,128})$`)

// HashedBalance reports whether b is a balance by a request's property,
// which HAProxy hashes onto a consistent ring (hash-type consistent, as
// for source).
func HashedBalance(b string) bool {
	return hashedBalance.MatchString(b) && !strings.Contains(b, "\n")
}
