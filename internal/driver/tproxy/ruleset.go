// Package tproxy hands every TCP connection to an (address, port) the
// controller serves to HAProxy's one fixed listener (render.Listeners,
// mode tproxy; docs/listeners.md), through the kernel's TPROXY: a table
// of its own, `inet haproxy_k8s_sync_tproxy`, with one set of (address .
// port) per family, a prerouting rule that gives the listener's socket
// the packets to them (`tproxy to :PORT`) and marks them, an output rule
// that marks those the host itself sends, and the policy routing the mark
// needs (`ip rule fwmark MARK lookup TABLE`, `ip route add local default
// dev lo table TABLE`, both families), the controller's own like the
// table. A new Service address or port is a set element: no bind, no
// reload. A port not served on a served address is refused (served.go).
//
// The UDP driver (internal/driver/nft) owns its table entirely (it reads
// every chain back as a UDP port and deletes the table to rebuild it), so
// this one has its own, beside it.
//
// This file is the pure part: the elements a model asks for (Elements),
// and the ruleset in `nft -f` syntax (Render).
package tproxy

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// Table is the name of the table this package owns, in family inet.
const Table = "haproxy_k8s_sync_tproxy"

// Names of the table's objects.
const (
	chainPre = "prerouting" // filter prerouting, priority mangle: tproxy
	chainOut = "output"     // route output, priority mangle: mark the host's own
	setV4    = "listen4"    // ipv4_addr . inet_service
	setV6    = "listen6"    // ipv6_addr . inet_service
)

// Defaults of the policy routing (Options).
const (
	DefaultMark       = 0x4b53 // "KS"
	DefaultRouteTable = 19283
	DefaultRulePrio   = 19283 // before the main table's rule (32766)
)

// Elements are the (address, port) pairs of cfg's listened frontends
// (o.Listened: the very binds the listener map keys), per family, sorted,
// without duplicates. Nothing else reaches the sets: an address the
// listener cannot key (render.ListenerAddrOK) keeps its frontend.
func Elements(cfg model.Config, o render.Options) (v4, v6 []netip.AddrPort) {
	return elementsBy(cfg, o, false) // httpsets.go
}

// Render is the table for the elements in `nft -f` syntax (what `render`
// writes beside haproxy.cfg), the same objects and rules the driver sends
// through netlink (kernel.go).
func Render(port uint16, mark uint32, v4, v6 []netip.AddrPort) []byte {
	return RenderSets(mark, ListenerSets{Port: port, V4: v4, V6: v6}, nil, nil)
}

// ListenerSets are one listener's port and elements.
type ListenerSets struct {
	Port   uint16
	V4, V6 []netip.AddrPort
}

// RenderSets is Render with the fixed HTTP listener's sets and rules too
// when http is not nil (httpsets.go), and the fixed HTTPS listener's
// when https is not nil (httpssets.go).
func RenderSets(mark uint32, tcp ListenerSets, http, https *ListenerSets) []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# TCP listeners of haproxy-k8s-sync through TPROXY (the controller owns this table)")
	w("# policy routing: ip rule add fwmark %#x lookup %d; ip route add local 0.0.0.0/0 dev lo table %d (and -6, ::/0)", mark, DefaultRouteTable, DefaultRouteTable)
	w("table inet %s", Table)
	w("delete table inet %s", Table)
	w("table inet %s {", Table)
	type kind struct {
		http setKind
		ListenerSets
	}
	kinds := []kind{{kindTCP, tcp}}
	if http != nil {
		kinds = append(kinds, kind{kindHTTP, *http})
	}
	if https != nil {
		kinds = append(kinds, kind{kindHTTPS, *https})
	}
	first := true
	for _, k := range kinds {
		for _, s := range []struct {
			name, typ string
			els       []netip.AddrPort
		}{{setName(false, k.http), "ipv4_addr", k.V4}, {setName(true, k.http), "ipv6_addr", k.V6}} {
			if !first {
				w("")
			}
			first = false
			els := make([]string, len(s.els))
			for j, e := range s.els {
				els[j] = e.Addr().String() + " . " + fmt.Sprint(e.Port())
			}
			writeSet(&b, s.name, s.typ+" . inet_service", els)
		}
	}
	// The served addresses (served.go): every listener's, per family.
	var a4, a6 []netip.Addr
	for _, k := range kinds {
		for _, e := range slices.Concat(k.V4, k.V6) {
			if e.Addr().Is4() {
				a4 = append(a4, e.Addr())
			} else {
				a6 = append(a6, e.Addr())
			}
		}
	}
	for _, s := range []struct {
		name, typ string
		addrs     []netip.Addr
	}{{setServed4, "ipv4_addr", a4}, {setServed6, "ipv6_addr", a6}} {
		slices.SortFunc(s.addrs, netip.Addr.Compare)
		var els []string
		for _, a := range slices.Compact(s.addrs) {
			els = append(els, a.String())
		}
		w("")
		writeSet(&b, s.name, s.typ, els)
	}
	w("")
	w("\tchain %s {", chainPre)
	w("\t\ttype filter hook prerouting priority mangle; policy accept;")
	for _, k := range kinds {
		w("\t\tmeta l4proto tcp ip daddr . tcp dport @%s tproxy ip to :%d meta mark set %#x accept", setName(false, k.http), k.Port, mark)
		w("\t\tmeta l4proto tcp ip6 daddr . tcp dport @%s tproxy ip6 to :%d meta mark set %#x accept", setName(true, k.http), k.Port, mark)
	}
	w("\t\tmeta l4proto tcp ip daddr @%s fib daddr type != local reject with tcp reset", setServed4)
	w("\t\tmeta l4proto tcp ip6 daddr @%s fib daddr type != local reject with tcp reset", setServed6)
	w("\t}")
	w("")
	w("\tchain %s {", chainOut)
	w("\t\ttype route hook output priority mangle; policy accept;")
	for _, k := range kinds {
		w("\t\tmeta l4proto tcp ip daddr . tcp dport @%s meta mark set %#x", setName(false, k.http), mark)
		w("\t\tmeta l4proto tcp ip6 daddr . tcp dport @%s meta mark set %#x", setName(true, k.http), mark)
	}
	w("\t}")
	w("")
	w("\tchain %s {", chainRefuse)
	w("\t\ttype filter hook output priority filter; policy accept;")
	w("\t\tmeta mark != %#x meta l4proto tcp ip daddr @%s fib daddr type != local reject with tcp reset", mark, setServed4)
	w("\t\tmeta mark != %#x meta l4proto tcp ip6 daddr @%s fib daddr type != local reject with tcp reset", mark, setServed6)
	w("\t}")
	w("}")
	return b.Bytes()
}

// writeSet writes set name of type typ holding els, as nft lists one.
func writeSet(b *bytes.Buffer, name, typ string, els []string) {
	fmt.Fprintf(b, "\tset %s {\n\t\ttype %s\n", name, typ)
	if len(els) > 0 {
		fmt.Fprintf(b, "\t\telements = { %s }\n", strings.Join(els, ",\n\t\t\t     "))
	}
	b.WriteString("\t}\n")
}
