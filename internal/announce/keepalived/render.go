// Package keepalived renders, for operators who already run keepalived,
// its configuration from the same addresses and hosts the announcers
// serve (`render keepalived` and the keepalived announcer): one VRRPv3
// instance per address family, every host BACKUP at one priority with
// nopreempt (sticky, as the layer 2 announcer: nothing moves back to a
// host that returns), the host's health a file keepalived tracks (so a
// change of health is a write, not a reload), the peers by unicast or
// the family's VRRP multicast group. Pure: bytes out, checked by
// `keepalived -t` in the tests.
package keepalived

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Defaults of Config.
const (
	DefaultPriority = 100
	DefaultAdvert   = time.Second
	// MinAdvert is the shortest advertisement interval VRRPv3 carries
	// (centiseconds).
	MinAdvert = 10 * time.Millisecond
)

// ErrConfig is the class of every configuration Render refuses.
var ErrConfig = errors.New("keepalived: configuration")

// Config is one host's keepalived.
type Config struct {
	// Name is this host's router_id (any text: written through
	// model.Name's rule).
	Name      string
	Interface string
	// VRID is the virtual_router_id of the IPv4 instance (1 to 254, the
	// same on every host of the group); the IPv6 instance's is VRID+1.
	VRID     int
	Priority int           // 1 to 254, default DefaultPriority
	Advert   time.Duration // default DefaultAdvert, whole centiseconds
	// Sources (at most one per family) and Peers make a family's adverts
	// unicast, from its source to each peer of that family; a family
	// without both is multicast on Interface.
	Sources []netip.Addr
	Peers   []netip.Addr
	// HealthFile is the file keepalived tracks: 0 in it, the host is
	// healthy; anything else puts both instances in FAULT (its
	// addresses go to another host).
	HealthFile string
}

// Render is c's keepalived.conf serving addrs (unmapped, sorted, once
// each; an instance only for a family with addresses).
func Render(c Config, addrs []netip.Addr) ([]byte, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	var v4, v6 []netip.Addr
	for _, a := range addrs {
		a = a.Unmap()
		if !a.IsValid() {
			continue
		}
		if a.Is4() {
			v4 = append(v4, a)
		} else {
			v6 = append(v6, a)
		}
	}
	var b strings.Builder
	b.WriteString("# Rendered by haproxy-k8s-sync (internal/announce/keepalived); do not edit.\n")
	fmt.Fprintf(&b, "global_defs {\n    router_id %s\n}\n", model.Name("hks", c.Name))
	// a missing file is made, unhealthy, until the announcer says otherwise
	fmt.Fprintf(&b, "vrrp_track_file hks_health {\n    file %q\n    init_file 1\n}\n", c.HealthFile)
	for i, fam := range [][]netip.Addr{v4, v6} {
		if len(fam) == 0 {
			continue
		}
		slices.SortFunc(fam, netip.Addr.Compare)
		fam = slices.Compact(fam)
		name, bits := "hks_ipv4", 32
		if i == 1 {
			name, bits = "hks_ipv6", 128
		}
		fmt.Fprintf(&b, "vrrp_instance %s {\n    state BACKUP\n    nopreempt\n    version 3\n", name)
		fmt.Fprintf(&b, "    interface %s\n    virtual_router_id %d\n    priority %d\n    advert_int %s\n",
			c.Interface, c.VRID+i, c.Priority, seconds(c.Advert))
		if peers := c.peers(i == 1); len(peers) > 0 {
			fmt.Fprintf(&b, "    unicast_src_ip %s\n    unicast_peer {\n", c.source(i == 1))
			for _, p := range peers {
				fmt.Fprintf(&b, "        %s\n", p)
			}
			b.WriteString("    }\n")
		}
		b.WriteString("    track_file {\n        hks_health weight 0\n    }\n    virtual_ipaddress {\n")
		for _, a := range fam {
			fmt.Fprintf(&b, "        %s/%d dev %s\n", a, bits, c.Interface)
		}
		b.WriteString("    }\n}\n")
	}
	return []byte(b.String()), nil
}

// source is the family's (v6 or not) unicast source, if any.
func (c Config) source(v6 bool) netip.Addr {
	for _, s := range c.Sources {
		if s.Is6() == v6 {
			return s
		}
	}
	return netip.Addr{}
}

// peers are the unicast peers of the family (v6 or not), none without a
// source of that family.
func (c Config) peers(v6 bool) []netip.Addr {
	if !c.source(v6).IsValid() {
		return nil
	}
	var out []netip.Addr
	for _, p := range c.Peers {
		if p.Is6() == v6 {
			out = append(out, p)
		}
	}
	return out
}

// seconds is d as keepalived's advert_int reads it.
func seconds(d time.Duration) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", d.Seconds()), "0"), ".")
}

// check fills the defaults and refuses what keepalived would misread;
// nothing a user gives reaches the file but through these rules.
func (c *Config) check() error {
	if c.Priority == 0 {
		c.Priority = DefaultPriority
	}
	if c.Advert == 0 {
		c.Advert = DefaultAdvert
	}
	switch {
	case !validIface(c.Interface):
		return fmt.Errorf("%w: interface %q: want 1 to 15 letters, digits, '.', '-' or '_'", ErrConfig, c.Interface)
	case c.VRID < 1 || c.VRID > 254:
		return fmt.Errorf("%w: virtual router ID %d: want 1 to 254 (the IPv6 instance takes the next)", ErrConfig, c.VRID)
	case c.Priority < 1 || c.Priority > 254:
		return fmt.Errorf("%w: priority %d: want 1 to 254", ErrConfig, c.Priority)
	case c.Advert < MinAdvert || c.Advert > 40*time.Second || c.Advert%MinAdvert != 0:
		return fmt.Errorf("%w: advert interval %s: want whole centiseconds from 10ms to 40s", ErrConfig, c.Advert)
	case c.HealthFile == "" || !strings.HasPrefix(c.HealthFile, "/") || strings.ContainsAny(c.HealthFile, "\"\\\n\r{}#!"):
		return fmt.Errorf("%w: health file %q: want an absolute path without quotes, braces, '#', '!' or line breaks", ErrConfig, c.HealthFile)
	case len(c.Sources) > 2 || len(c.Sources) == 2 && c.Sources[0].Is6() == c.Sources[1].Is6():
		return fmt.Errorf("%w: unicast sources %v: want at most one per family", ErrConfig, c.Sources)
	}
	for _, p := range c.Peers {
		if !c.source(p.Is6()).IsValid() {
			return fmt.Errorf("%w: unicast peer %s without a source address of its family", ErrConfig, p)
		}
	}
	return nil
}

// validIface is an interface name as the kernel takes it, kept to a
// charset keepalived's parser reads as one word.
func validIface(n string) bool {
	if n == "" || len(n) > 15 {
		return false
	}
	for _, c := range []byte(n) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
