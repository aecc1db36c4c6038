package model

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxNameLen bounds the names Name builds: a frontend, backend or UDP
// port's name, and the nftables chains and sets named after it (the
// kernel's limit is 255 bytes with the driver's suffixes), and the ACL
// and map files named after a frontend.
const MaxNameLen = 200

// Name is the one rule for every identifier written into haproxy.cfg or
// the nftables ruleset: prefix and parts joined with "_". Parts come from
// Kubernetes names (DNS labels and subdomains, which the apiserver
// validates) and port numbers. Still, any byte of a part but a lower-case
// letter, a digit or "-" (a dot of a subdomain; a newline, '#', a space,
// a quote or unicode from a file read by render) becomes "-", and then,
// or when the name would be longer than MaxNameLen, a hash of the raw
// parts keeps it unique. Nothing but those characters, "_" and the
// prefix's reaches a configuration; a clean name is written as it is.
func Name(prefix string, parts ...string) string { return NameWithin(MaxNameLen, prefix, parts...) }

// NameWithin is Name with another bound than MaxNameLen (at least 20):
// the gateway mode's names keep the 100 bytes they always had, so that
// they do not change on an upgrade.
func NameWithin(maxLen int, prefix string, parts ...string) string {
	raw := prefix + "_" + strings.Join(parts, "_")
	clean := make([]byte, 0, len(raw))
	clean = append(clean, prefix...)
	clean = append(clean, '_')
	for i, p := range parts {
		if i > 0 {
			clean = append(clean, '_')
		}
		for _, c := range []byte(p) {
			if !NameByte(c) {
				c = '-'
			}
			clean = append(clean, c)
		}
	}
	n := string(clean)
	if n == raw && len(n) <= maxLen {
		return n
	}
	sum := sha256.Sum256([]byte(raw))
	return n[:min(len(n), maxLen-10)] + "_" + hex.EncodeToString(sum[:4])
}

// NameByte reports whether c may stand in a part of a Name as it is.
func NameByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' }
