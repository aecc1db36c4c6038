package gateway

import (
	"fmt"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/cputime"
)

// manyRoutes is a Gateway with one HTTP listener, n HTTPRoutes (route i:
// host r<i>.example.com, an Exact path, a header match, a 90/10 split of
// two of svcs Services) and their Services.
func manyRoutes(n, svcs int) Input {
	in := Input{Classes: []*gwv1.GatewayClass{class("hks", ControllerName)},
		Gateways: []*gwv1.Gateway{gateway("apps", "gw", "hks", 0, listenerOf("http", gwv1.HTTPProtocolType, 80, ""))}}
	for i := range svcs {
		s, sl := service("apps", "s"+strconv.Itoa(i), corev1.ProtocolTCP, 80, 8080, fmt.Sprintf("10.244.%d.%d", i/250, i%250+1))
		in.Services, in.Slices = append(in.Services, s), append(in.Slices, sl)
	}
	for i := range n {
		in.HTTPRoutes = append(in.HTTPRoutes, benchRoute(i, svcs, "/p"))
	}
	return in
}

func benchRoute(i, svcs int, path string) *gwv1.HTTPRoute {
	r := httpRoute("apps", "r"+strconv.Itoa(i), parent("gw", ""))
	r.CreationTimestamp.Time = t0.Add(time.Duration(i) * time.Second)
	r.Spec.Hostnames = []gwv1.Hostname{gwv1.Hostname("r" + strconv.Itoa(i) + ".example.com")}
	exact := gwv1.PathMatchExact
	p := path + strconv.Itoa(i)
	r.Spec.Rules = []gwv1.HTTPRouteRule{{
		Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &exact, Value: &p},
			Headers: []gwv1.HTTPHeaderMatch{{Name: "x-env", Value: "canary"}}}},
		BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: ref("", "s"+strconv.Itoa(i%svcs), 80, 90)}, {BackendRef: ref("", "s"+strconv.Itoa((i+1)%svcs), 80, 10)}},
	}}
	return r
}

// BenchmarkComputeHTTPRoutes: one pass of Compute with one HTTPRoute
// changed among n, every route compiled (whole) and with the per-route
// memo (memo); memo-2svc is memo with the routes' backends two Services,
// as in BenchmarkHTTPRoutePropagation (test/e2e), where the routes, not
// the Services, are the many; new-2svc the same with a new route (the
// youngest) added each pass instead of route 0 changed; status-2svc
// the same with a new object for each of n/2 routes whose status alone
// differs (the publisher's writes echoed: at the start, every route's);
// new-2svc-cold is new-2svc with the caches evicted before each pass.
//
//	go test ./internal/gateway -run '^$' -bench BenchmarkComputeHTTPRoutes -benchtime 20x
func BenchmarkComputeHTTPRoutes(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		for _, way := range []string{"whole", "memo", "memo-2svc", "new-2svc", "status-2svc", "new-2svc-cold"} {
			b.Run(strconv.Itoa(n)+"/"+way, func(b *testing.B) {
				svcs := n / 2
				if strings.Contains(way, "-2svc") {
					svcs = 2
				}
				cold := strings.HasSuffix(way, "-cold")
				if cold {
					evict() // its buffer made before the passes counted
				}
				in := manyRoutes(n, svcs)
				opts := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}}
				if way != "whole" {
					opts.Memo = &Memo{}
				}
				// With the memo, each pass is told the changed routes as the
				// source's journal tells them (routechanges.go).
				at := uint64(1)
				told := func(hs ...*gwv1.HTTPRoute) {
					if opts.Memo == nil {
						return
					}
					c := &ChangedRoutes{From: at, To: at + 1}
					for _, h := range hs {
						c.Keys, c.Objs = append(c.Keys, Key{h.Namespace, h.Name}), append(c.Objs, h)
					}
					in.HTTPRouteChanges, at = c, at+1
				}
				in.HTTPRouteChanges = &ChangedRoutes{To: at, All: true}
				Compute(in, opts)
				gen := 0
				var cpu time.Duration
				for b.Loop() {
					gen++
					switch strings.TrimSuffix(way, "-cold") {
					case "new-2svc":
						in.HTTPRoutes = append(in.HTTPRoutes, benchRoute(n+gen, svcs, "/p"))
						told(in.HTTPRoutes[len(in.HTTPRoutes)-1])
					case "status-2svc":
						var hs []*gwv1.HTTPRoute
						for i := range n / 2 {
							r := *in.HTTPRoutes[(gen*n/2+i)%n] // the spec shared: never changed in place
							r.Status.Parents = []gwv1.RouteParentStatus{{ControllerName: gwv1.GatewayController("g" + strconv.Itoa(gen))}}
							in.HTTPRoutes[(gen*n/2+i)%n] = &r
							hs = append(hs, &r)
						}
						told(hs...)
					default:
						in.HTTPRoutes[0] = benchRoute(0, svcs, "/g"+strconv.Itoa(gen))
						told(in.HTTPRoutes[0])
					}
					if cold {
						evict()
					}
					c := cputime.Used()
					Compute(in, opts)
					cpu += cputime.Used() - c
				}
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(gen), "cpu-ms/op")
				if m := opts.Memo; m != nil && m.Told < gen {
					b.Fatalf("%d of %d passes took the told routes", m.Told, gen)
				}
			})
		}
	}
}

// evictBuf is larger than the machine's last-level cache: evict writes
// it, so the next pass finds none of the memo's routes cached, as a
// controller's pass does between the apiserver's, HAProxy's and the
// driver's work (the pass is memory-bound there: its many routes'
// objects, a few cache lines each, are read from memory).
// Made at the first use: not for every test of the package.
var evictBuf []byte

func evict() {
	if evictBuf == nil {
		evictBuf = make([]byte, 64<<20)
	}
	for i := 0; i < len(evictBuf); i += 64 {
		evictBuf[i]++
	}
}

// BenchmarkComputeHTTPRoutesHeap: the heap a gateway loop keeps between
// passes at n HTTPRoutes (each its own host, to n/2 Services): the
// memo and the last pass's result, measured after a collection, beside
// the input itself (measured the same way before the first pass).
//
//	go test ./internal/gateway -run '^$' -bench BenchmarkComputeHTTPRoutesHeap -benchtime 1x
func BenchmarkComputeHTTPRoutesHeap(b *testing.B) {
	for _, n := range []int{10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				heap := func() float64 {
					var ms runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&ms)
					return float64(ms.HeapAlloc) / (1 << 20)
				}
				in := manyRoutes(n, n/2)
				base := heap()
				opts := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}, Memo: &Memo{}}
				res := Compute(in, opts)
				for i := range 3 { // a few changes, as a running loop sees
					in.HTTPRoutes[i] = benchRoute(i, n/2, "/h")
					res = Compute(in, opts)
				}
				kept := heap() - base
				runtime.KeepAlive(res)
				runtime.KeepAlive(in)
				runtime.KeepAlive(opts.Memo)
				b.ReportMetric(kept, "kept-MiB")
				b.ReportMetric(base, "input-MiB")
			}
		})
	}
}
