package cli

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// flagErr is a flag or environment value that is wrong: a usage error
// (exit 2) whose hint execute fills with the command's --help.
func flagErr(format string, a ...any) error {
	return usageError{msg: fmt.Sprintf(format, a...)}
}

// maxSocketPath is the longest Unix socket path the kernel takes
// (sun_path holds 108 bytes with the terminating zero).
const maxSocketPath = 107

// checkConfigPath is the grammar of a file path the config names
// (--stats-socket, --state-file, an --instance's stats= and state=):
// letters, digits and /._+=~- only, so that no newline adds a directive,
// no '#' comments out the rest of a line (level admin), no space, quote
// or backslash changes how HAProxy splits it, and no '@', ':' or ','
// makes the stats socket's path an address prefix, a port or a list of
// addresses (HAProxy 2.6 reads "/run/a@b:c" as an address and a port).
// Empty is allowed where the flag allows it (the caller decides).
func checkConfigPath(p string, socket bool) error {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && strings.IndexByte("/._+=~-", c) < 0 {
			return fmt.Errorf("%s: byte %q is not allowed in a path HAProxy's config names (letters, digits and /._+=~- only)", strconv.Quote(p), c)
		}
	}
	if p != "" && p[0] == '-' {
		return fmt.Errorf("%s: starts with '-'", strconv.Quote(p))
	}
	if socket && len(p) > maxSocketPath {
		return fmt.Errorf("%s: %d bytes, longer than a Unix socket path may be (%d)", strconv.Quote(p), len(p), maxSocketPath)
	}
	return nil
}

// pathValue is a string flag holding a path the config names, checked
// with checkConfigPath when set (on the command line or from the
// environment).
type pathValue struct {
	p      *string
	socket bool
}

func (v pathValue) String() string { return *v.p }
func (v pathValue) Type() string   { return "string" }
func (v pathValue) Set(s string) error {
	if err := checkConfigPath(s, v.socket); err != nil {
		return err
	}
	*v.p = s
	return nil
}

// countValue is an int flag that may not be negative.
type countValue struct{ p *int }

func (v countValue) String() string { return strconv.Itoa(*v.p) }
func (v countValue) Type() string   { return "int" }
func (v countValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want a whole number, got %s", strconv.Quote(s))
	}
	if n < 0 {
		return fmt.Errorf("want 0 or more, got %d", n)
	}
	*v.p = n
	return nil
}

// listenValue is an IP:PORT flag HAProxy listens on: an address without
// a zone (HAProxy and nft refuse one) and a port of 1-65535.
type listenValue struct{ p *netip.AddrPort }

func (v listenValue) String() string {
	if !v.p.IsValid() {
		return ""
	}
	return v.p.String()
}
func (v listenValue) Type() string { return "" } // as pflag's TextVar of a netip.AddrPort
func (v listenValue) Set(s string) error {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return fmt.Errorf("want IP:PORT or [IPv6]:PORT, got %s", strconv.Quote(s))
	}
	if err := checkListenAddr(ap.Addr()); err != nil {
		return err
	}
	if ap.Port() == 0 {
		return fmt.Errorf("%s: port 0; want 1-65535", strconv.Quote(s))
	}
	*v.p = ap
	return nil
}

// checkListenAddr refuses an address with an IPv6 zone, which neither
// HAProxy's bind nor an nftables rule takes.
func checkListenAddr(a netip.Addr) error {
	if a.Zone() != "" {
		return errors.New(strconv.Quote(a.String()) + ": an IPv6 zone is not allowed (HAProxy and nftables take none)")
	}
	return nil
}
