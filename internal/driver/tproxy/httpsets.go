package tproxy

import (
	"net/netip"
	"slices"

	"github.com/google/nftables"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// The fixed HTTP listener's sets (render.Options.HTTPListener, issue 29):
// the binds of the plain HTTP frontends (render.Options.HTTPListened)
// are elements of two sets of their own, http4 and http6, whose
// prerouting rule hands their connections to the HTTP listener's port
// (render.Options.HTTPListenerPort) as the TCP sets' rule does to the TCP
// listener's. They exist only with the HTTP listener on; their elements
// are kept as the TCP sets' are (a wantSet and an applied set of their
// own), by the same passes, in the same order around HAProxy's driver
// (Ordered).

const (
	setHTTP4 = "http4" // ipv4_addr . inet_service
	setHTTP6 = "http6" // ipv6_addr . inet_service
)

// setKind is a listener whose sets the table has: the TCP listener's,
// the fixed HTTP listener's, the fixed HTTPS listener's (httpssets.go).
type setKind uint8

const (
	kindTCP setKind = iota
	kindHTTP
	kindHTTPS
)

// kindOf is the TCP or the HTTP listener's kind.
func kindOf(http bool) setKind {
	if http {
		return kindHTTP
	}
	return kindTCP
}

// setName names a listener's set of one family.
func setName(v6 bool, k setKind) string {
	names := [...][2]string{kindTCP: {setV4, setV6}, kindHTTP: {setHTTP4, setHTTP6}, kindHTTPS: {setHTTPS4, setHTTPS6}}
	if v6 {
		return names[k][1]
	}
	return names[k][0]
}

// listenedBy is the one predicate of what reaches a set: o.Listened for
// the TCP listener's, o.HTTPListened for the HTTP listener's.
func listenedBy(f model.Frontend, o render.Options, http bool) bool {
	if http {
		return o.HTTPListened(f)
	}
	return o.Listened(f)
}

// HTTPElements are Elements for the fixed HTTP listener: the binds of
// cfg's frontends o.HTTPListened takes, per family, sorted, without
// duplicates.
func HTTPElements(cfg model.Config, o render.Options) (v4, v6 []netip.AddrPort) {
	return elementsBy(cfg, o, true)
}

func elementsBy(cfg model.Config, o render.Options, http bool) (v4, v6 []netip.AddrPort) {
	return listenedElements(cfg, func(f *model.Frontend) bool { return (!http || f.HTTP != nil) && listenedBy(*f, o, http) })
}

// listenedElements are the binds of cfg's frontends listened takes, per family,
// sorted, without duplicates.
func listenedElements(cfg model.Config, listened func(*model.Frontend) bool) (v4, v6 []netip.AddrPort) {
	for i := range cfg.Frontends {
		f := &cfg.Frontends[i]
		if !listened(f) {
			continue
		}
		for _, b := range f.Binds {
			ap := netip.AddrPortFrom(b.Addr, b.Port)
			if b.Addr.Is4() {
				v4 = append(v4, ap)
			} else {
				v6 = append(v6, ap)
			}
		}
	}
	for _, s := range []*[]netip.AddrPort{&v4, &v6} {
		slices.SortFunc(*s, netip.AddrPort.Compare)
		*s = slices.Compact(*s)
	}
	return v4, v6
}

// setOps are one kind's element changes of a pass, by family.
type setOps struct {
	kind      setKind
	del, adds [2][]nftables.SetElement
	n         int
}

// elementOps are the changes that bring applied to w's wants, adding
// only what add lets in.
func elementOps(w *wantSet, applied map[netip.AddrPort]bool, add func(netip.AddrPort) bool) setOps {
	ops := setOps{kind: kindOf(w.http)}
	fam := func(ap netip.AddrPort) int {
		if ap.Addr().Is4() {
			return 0
		}
		return 1
	}
	dels, added := w.diff(applied, add)
	for _, e := range dels {
		ops.del[fam(e)] = append(ops.del[fam(e)], nftables.SetElement{Key: key(e)})
	}
	for _, e := range added {
		ops.adds[fam(e)] = append(ops.adds[fam(e)], nftables.SetElement{Key: key(e)})
	}
	ops.n = len(dels) + len(added)
	return ops
}

// batches are the ops in batches (batch.go), each op naming its kind.
func (s setOps) batches() [][]elemOp {
	bs := batches(s.del, s.adds)
	for _, b := range bs {
		for i := range b {
			b[i].kind = s.kind
		}
	}
	return bs
}

// record makes applied what the sets hold once the ops went through.
func (s setOps) record(applied map[netip.AddrPort]bool) {
	for i := range s.del {
		for _, e := range s.del[i] {
			ap, _ := parseKey(e.Key)
			delete(applied, ap)
		}
		for _, e := range s.adds[i] {
			ap, _ := parseKey(e.Key)
			applied[ap] = true
		}
	}
}
