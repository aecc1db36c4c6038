package haproxy

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is an HAProxy release as its master (`show proc`), its worker
// (`show info`) and `haproxy -v` print it, e.g. "3.0.11-1+deb13u4": the
// numbers and the whole text.
type Version struct {
	Major, Minor, Patch int
	Text                string // as printed, packaging suffix included
}

// ParseVersion reads "MAJOR.MINOR[.PATCH][-suffix]" (a development
// release's "3.3-dev5" too). An empty or malformed text is an error
// wrapping ErrCommand; a parsed Version is Known.
func ParseVersion(s string) (Version, error) {
	s = strings.TrimSpace(s)
	v := Version{Text: s}
	num := s
	if i := strings.IndexAny(num, "-+~ "); i >= 0 {
		num = num[:i]
	}
	parts := strings.Split(num, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("%w: version %q: want MAJOR.MINOR[.PATCH]", ErrCommand, s)
	}
	dst := []*int{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || len(p) > 4 {
			return Version{}, fmt.Errorf("%w: version %q: bad number %q", ErrCommand, s, p)
		}
		*dst[i] = n
	}
	if v.Major == 0 {
		return Version{}, fmt.Errorf("%w: version %q: no HAProxy release is 0.x", ErrCommand, s)
	}
	return v, nil
}

// AtLeast reports whether v is major.minor or newer. The zero Version
// (not known) is older than every release.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}

// Known reports whether v was read from HAProxy.
func (v Version) Known() bool { return v.Major > 0 }

// Branch is "MAJOR.MINOR", the release branch ("3.0").
func (v Version) Branch() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

func (v Version) String() string {
	if v.Text != "" {
		return v.Text
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// What each release's master CLI offers (doc/management.txt of each
// branch, and FIELD-NOTES.md "HAProxy versions").
const (
	// From 2.7 the master answers "reload" itself once the new
	// configuration is loaded or refused: "Success=1" or "Success=0",
	// then "--" and the startup logs.
	syncReloadMajor, syncReloadMinor = 2, 7
)

// SyncReload reports whether v's master answers a reload with its outcome
// (2.7+); older ones are confirmed by polling `show proc`.
func (v Version) SyncReload() bool { return v.AtLeast(syncReloadMajor, syncReloadMinor) }

// From 3.4 `http-request set-timeout` also takes `connect` (and `queue`,
// `tarpit`: doc/configuration.txt of 3.4, haproxy commit 5a079d181 of
// 3.4-dev10; 2.6 to 3.3 take client, server and tunnel only): a backend
// sets the connect timeout of the request from an expression.
const connectPerRequestMajor, connectPerRequestMinor = 3, 4

// ConnectPerRequest reports whether v sets a connect timeout per request
// (3.4+). The zero Version (not known) does not.
func (v Version) ConnectPerRequest() bool {
	return v.AtLeast(connectPerRequestMajor, connectPerRequestMinor)
}

// From 3.0 `del server` refuses a server that a request waiting for its
// retry still names ("Server still has connections attached to it":
// measured on 3.0.11 and 3.4.7, haproxy commit 1b8c5abee of 3.0-dev4);
// 2.6.12 deletes it, and the request later reads freed memory.
const guardedDeleteMajor, guardedDeleteMinor = 3, 0

// GuardsServerDeletion reports whether v refuses to delete a server a
// stream still names (3.0+). The zero Version (not known) does not.
func (v Version) GuardsServerDeletion() bool {
	return v.AtLeast(guardedDeleteMajor, guardedDeleteMinor)
}
