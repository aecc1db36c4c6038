package model

import "strings"

// SparePrefix starts the name of every spare backend of the pool of ready
// backends (internal/spares: `_pool_0`, `_pool_1`, ...). A Service's
// backend name starts with a letter or digit (Name), so a spare's never
// collides with one. It is here, not in internal/spares, so that render
// can tell a spare from its name (a spare carries its own source ranges
// behind the fixed listener).
const SparePrefix = "_pool_"

// SpareIndex is the number of the spare named name, false when name is not
// a spare's (SparePrefix and a decimal number without leading zeros).
func SpareIndex(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, SparePrefix)
	if !ok || s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
