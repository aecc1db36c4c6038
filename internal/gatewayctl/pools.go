package gatewayctl

import (
	"log/slog"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// poolBook reads the AddressPools on every pass, as the Services mode
// does: a pool whose spec cannot be read keeps its last good spec,
// frozen (the addresses it gave stay, it gives no new one); a deleted
// pool is forgotten (its addresses go).
type poolBook struct {
	last     map[string]pools.Pool
	reported map[string]string
	log      *slog.Logger
}

func newPoolBook(log *slog.Logger) *poolBook {
	return &poolBook{last: map[string]pools.Pool{}, reported: map[string]string{}, log: log}
}

func (b *poolBook) parse(objs []*unstructured.Unstructured) []pools.Pool {
	var out []pools.Pool
	seen := make(map[string]bool, len(objs))
	for _, o := range objs {
		seen[o.GetName()] = true
		ap, err := pools.FromUnstructured(o)
		if err == nil {
			var p pools.Pool
			if p, err = ap.Pool(); err == nil {
				out = append(out, p)
				b.last[p.Name] = p
				delete(b.reported, p.Name)
				continue
			}
		}
		if last, ok := b.last[o.GetName()]; ok {
			last.Frozen = true
			out = append(out, last)
		}
		if b.reported[o.GetName()] != err.Error() {
			b.reported[o.GetName()] = err.Error()
			b.log.Warn("AddressPool not usable", "pool", o.GetName(), "err", err)
		}
	}
	for name := range b.last {
		if !seen[name] {
			delete(b.last, name)
		}
	}
	return out
}
