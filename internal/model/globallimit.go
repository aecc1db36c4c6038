package model

import (
	"net/netip"
	"slices"
	"strings"
)

// A request limit per window and key (ingress-nginx's global-rate-limit,
// -window, -key and -ignored-cidrs): the requests an Ingress serves per
// key in a window of fixed length, estimated over a sliding window from
// the window's count and the last one's (lua-resty-global-throttle's
// estimate: last × (window − elapsed) / window + this). Map data
// (render/globallimit.go): fixed rules count in the frontend's own stick
// table, so it is given, changed and removed without a reload. The
// count is each HAProxy process's own (ingress-nginx shares it between
// its replicas through memcached; we share nothing).

// GlobalLimit limits the requests served per key: beyond Limit in a
// Window, 429.
type GlobalLimit struct {
	// Limit is the requests served per key in a window, 1 or more.
	Limit int32
	// Window is the window's length in seconds, 1 to MaxGlobalWindow.
	Window int32
	// Key is what the requests are counted by: nginx variables and
	// literal text (GlobalKeyProblem); "" is the client's address
	// ($remote_addr).
	Key string
	// Ignored are the sources never limited nor counted: masked, valid.
	Ignored []netip.Prefix
	// Scope names the counters: the actions of one Scope (an Ingress's
	// namespace/name) count together.
	Scope string
}

// MaxGlobalWindow bounds GlobalLimit.Window: an hour (the stick table
// keeps a key for two windows).
const MaxGlobalWindow = 3600

// maxGlobalKey bounds GlobalLimit.Key's length.
const maxGlobalKey = 256

// GlobalKeyProblem says what is wrong with a limit's key template ("" when
// nothing): nginx variables (ExtAuthVars and the families of
// ExtAuthVarPrefixes) and literal letters, digits and "-_.:|/@", at most
// 256 bytes.
func GlobalKeyProblem(k string) string {
	if k == "" || len(k) > maxGlobalKey {
		return "is empty or longer than 256 bytes"
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("${}-_.:|/@", c) >= 0 {
			continue
		}
		return "holds " + quoteByte(c) + ": only nginx variables and letters, digits and -_.:|/@"
	}
	if _, bad := withExtAuthVars(k); bad != "" {
		return bad
	}
	return ""
}

func quoteByte(c byte) string {
	if c < ' ' || c >= 0x7f {
		return "a byte that is not visible ASCII"
	}
	return "'" + string(c) + "'"
}

// ValidGlobalLimit reports whether g may be written.
func ValidGlobalLimit(g *GlobalLimit) bool {
	return g != nil && g.Limit > 0 && g.Window > 0 && g.Window <= MaxGlobalWindow && g.Scope != "" &&
		(g.Key == "" || GlobalKeyProblem(g.Key) == "")
}

// globalLimitEqual reports whether two limits are the same.
func globalLimitEqual(a, b *GlobalLimit) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Limit == b.Limit && a.Window == b.Window && a.Key == b.Key && a.Scope == b.Scope && slices.Equal(a.Ignored, b.Ignored)
}
