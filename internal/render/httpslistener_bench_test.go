package render

import (
	"net/netip"
	"strconv"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// BenchmarkHTTPSListenerFront is what the fixed HTTPS listener's claims
// and frontend cost each of their callers in a pass (the driver's
// certificates, route maps, client certificate map and commits, the
// kernel's sets, the held names): N HTTPS Gateways among 10,000
// Services' frontends, which a caller walks without copying; -claimed:
// the model carrying its claims (ClaimHTTPS, once a pass).
func BenchmarkHTTPSListenerFront(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		cfg := model.Config{}
		for i := range 10000 {
			addr := netip.AddrFrom4([4]byte{10, 0, byte(i / 250), byte(1 + i%250)})
			cfg.Frontends = append(cfg.Frontends, model.Frontend{Name: "svc_" + strconv.Itoa(i), Backend: "be", Binds: []model.Bind{{Addr: addr, Port: 80}}})
		}
		for i := range n {
			addr := netip.AddrFrom4([4]byte{203, 0, byte(113 + i/250), byte(1 + i%250)})
			h := "gw" + strconv.Itoa(i) + ".example.com"
			cfg.Frontends = append(cfg.Frontends, gatewayHTTPS("gw_"+strconv.Itoa(i), addr.String(), 443, "be", []string{h}, "cert_"+strconv.Itoa(i)+"="+h))
		}
		o := httpsListenerOpts()
		b.Run(strconv.Itoa(n)+"-gateways", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _, _ = HTTPSListenerFront(cfg, o)
			}
		})
		// As the pass's consumers ask it: the claims made once, carried.
		claimed := o.ClaimHTTPS(cfg)
		b.Run(strconv.Itoa(n)+"-gateways-claimed", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _, _ = HTTPSListenerFront(claimed, o)
			}
		})
	}
}
