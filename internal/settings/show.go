package settings

import (
	"strconv"
	"unicode/utf8"
)

// MaxShown is how many bytes of a user-supplied value a message (an
// error, an Event, a log line) shows at most.
const MaxShown = 256

// ShowValue is a user-supplied value as a message shows it: Go-quoted, so
// that a newline or a quote cannot split or forge a line, and cut to
// MaxShown bytes (at a rune boundary) with "..." and its length in bytes
// when longer.
func ShowValue(v string) string {
	if len(v) <= MaxShown {
		return strconv.Quote(v)
	}
	cut := MaxShown
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return strconv.Quote(v[:cut]) + "... (" + strconv.Itoa(len(v)) + " bytes)"
}

// ShowName is a user-supplied key, name or protocol as a message shows
// it: bare when it is made only of the characters a Kubernetes name or
// annotation key may hold (ASCII letters, digits, '.', '_', '-', '/') and
// is no longer than MaxShown, as ShowValue shows it otherwise.
func ShowName(s string) string {
	if s == "" || len(s) > MaxShown {
		return ShowValue(s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/') {
			return ShowValue(s)
		}
	}
	return s
}
