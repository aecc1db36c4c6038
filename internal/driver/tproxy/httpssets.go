package tproxy

import (
	"net/netip"
	"slices"

	"github.com/google/nftables"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// The fixed HTTPS listener's sets (render.Options.HTTPSListener): the
// binds of the frontends render.Options.HTTPSListened takes are elements
// of https4 and https6, whose prerouting rule hands their connections to
// the HTTPS listener's port as the HTTP sets' rule does to the HTTP
// listener's. Which frontends share it depends on the others (their
// certificates' names), so the elements are taken whole each pass, not
// kept by frontend as the wantSets keep theirs: a few HTTPS Gateways.

const (
	setHTTPS4 = "https4" // ipv4_addr . inet_service
	setHTTPS6 = "https6" // ipv6_addr . inet_service
)

// HTTPSElements are Elements for the fixed HTTPS listener: the binds of
// the frontends o.HTTPSListened takes, per family, sorted, without
// duplicates.
func HTTPSElements(cfg model.Config, o render.Options) (v4, v6 []netip.AddrPort) {
	return httpsBinds(cfg, o.HTTPSListened(cfg), true)
}

// httpsBinds are the binds, per family, sorted, without duplicates, of
// cfg's terminating HTTP frontends that in takes (listened) or does not.
func httpsBinds(cfg model.Config, in map[string]bool, listened bool) (v4, v6 []netip.AddrPort) {
	return listenedElements(cfg, func(f *model.Frontend) bool { return f.HTTP != nil && f.TLS != nil && in[f.Name] == listened }) // httpsets.go
}

// httpsOps are the changes that bring applied to cfg's HTTPS elements,
// adding only what add lets in. With moving, an element is kept where a
// frontend of cfg leaving the listener binds it (a frontend of its own,
// which HAProxy's reload brings): the running listener serves it until
// then (make before break), and the pass's last Apply deletes it.
func httpsOps(cfg model.Config, o render.Options, applied map[netip.AddrPort]bool, add func(netip.AddrPort) bool, moving bool) setOps {
	ops := setOps{kind: kindHTTPS}
	in := o.HTTPSListened(cfg)
	v4, v6 := httpsBinds(cfg, in, true)
	want := make(map[netip.AddrPort]bool, len(v4)+len(v6))
	if moving && len(applied) > 0 {
		// An element applied and bound by a frontend of cfg behind no
		// listener: kept (a few HTTPS frontends; a Service's has no TLS).
		o4, o6 := httpsBinds(cfg, in, false)
		for _, e := range slices.Concat(o4, o6) {
			if applied[e] {
				want[e] = true
			}
		}
	}
	for fam, els := range [2][]netip.AddrPort{v4, v6} {
		for _, e := range els {
			want[e] = true
			if !applied[e] && add(e) {
				ops.adds[fam] = append(ops.adds[fam], nftables.SetElement{Key: key(e)})
				ops.n++
			}
		}
	}
	for _, e := range slices.SortedFunc(func(yield func(netip.AddrPort) bool) {
		for e := range applied {
			if !want[e] && !yield(e) {
				return
			}
		}
	}, netip.AddrPort.Compare) {
		fam := 0
		if e.Addr().Is6() {
			fam = 1
		}
		ops.del[fam] = append(ops.del[fam], nftables.SetElement{Key: key(e)})
		ops.n++
	}
	return ops
}
