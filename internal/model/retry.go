package model

import (
	"slices"
	"strconv"
	"strings"
)

// RetryCodes are the response status codes HAProxy 2.6 can retry a
// request on (retry-on): no other.
var RetryCodes = []int{401, 403, 404, 408, 425, 500, 501, 502, 503, 504}

// RetryEvents are the retry-on keywords of failures without a response:
// the connection or its TLS handshake failed, the server closed without
// answering, or the server timeout fired.
var RetryEvents = []string{"conn-failure", "empty-response", "response-timeout"}

// RetryJunk is the retry-on keyword of a response HAProxy could not
// parse (nginx's invalid_header), valid in a RetryOn beside RetryEvents.
const RetryJunk = "junk-response"

// MaxRetries bounds Backend.Retries.
const MaxRetries = 10

// ValidRetryOn reports whether s may be a Backend's RetryOn: RetryEvents
// and RetryCodes, space-separated, each once.
func ValidRetryOn(s string) bool {
	words := strings.Fields(s)
	if len(words) == 0 || strings.Join(words, " ") != s {
		return false
	}
	for i, w := range words {
		code, err := strconv.Atoi(w)
		if !slices.Contains(RetryEvents, w) && w != RetryJunk && (err != nil || !slices.Contains(RetryCodes, code) || strconv.Itoa(code) != w) {
			return false
		}
		if slices.Contains(words[:i], w) {
			return false
		}
	}
	return true
}
