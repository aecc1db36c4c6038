package render

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// randomHTTPFrontend is a frontend named name of random kind: mostly a
// plain HTTP Gateway listener (1-3 hosts, 1-2 actions, on one or two of
// a few addresses, so that frontends share keys), else a TLS one or a
// TCP Service, which the fixed HTTP listener does not take.
func randomHTTPFrontend(r *rand.Rand, name string) model.Frontend {
	addr := func() netip.Addr { return netip.AddrFrom4([4]byte{203, 0, 113, byte(10 + r.IntN(4))}) }
	port := uint16(80 + r.IntN(2))
	var hosts []string
	for j := range 1 + r.IntN(3) {
		hosts = append(hosts, "h"+strconv.Itoa(j+r.IntN(3))+".example.com")
	}
	f := gatewayHTTP(name, "203.0.113.10", port, "be_"+name, hosts...)
	f.Binds[0].Addr = addr()
	if r.IntN(3) == 0 {
		f.Binds = append(f.Binds, model.Bind{Addr: addr(), Port: port, Transparent: true})
	}
	if r.IntN(2) == 0 { // a second action, the last host's
		f.HTTP.Actions = append(f.HTTP.Actions, model.HTTPAction{Backends: []model.WeightedBackend{{Name: "be2_" + name, Weight: 1}}})
		f.HTTP.Hosts[len(f.HTTP.Hosts)-1].Rules[0].Action = 1
		model.Shaped(f.HTTP)
	}
	switch r.IntN(8) {
	case 0:
		f.TLS = &model.TLS{}
	case 1:
		f.HTTP, f.Backend = nil, "be_"+name
	}
	return f
}

// The memo's view is the whole view, pass after pass, through random
// changes: frontends added, dropped, given a new table or new binds (the
// rest shared with the pass before, as the models are); and a pass in
// which no listened frontend changed builds nothing and gives the last
// table itself.
func TestHTTPListenerMemoRandom(t *testing.T) {
	o := httpListenerOpts()
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 29))
		var memo HTTPListenerMemo
		var fs []model.Frontend
		next := 0
		for pass := range 30 {
			fs = slices.Clone(fs)
			changed := false
			for range r.IntN(4) {
				switch op := r.IntN(4); {
				case op == 0 || len(fs) == 0:
					name := "gw_" + strconv.Itoa(next)
					next++
					at := r.IntN(len(fs) + 1)
					fs = slices.Insert(fs, at, randomHTTPFrontend(r, name))
				case op == 1:
					i := r.IntN(len(fs))
					fs = slices.Delete(fs, i, i+1)
				case op == 2:
					i := r.IntN(len(fs))
					fs[i] = randomHTTPFrontend(r, fs[i].Name)
				default:
					i := r.IntN(len(fs))
					fs[i].Binds = slices.Clone(fs[i].Binds)
					fs[i].Binds[0].Port = uint16(80 + r.IntN(2))
				}
				changed = true
			}
			cfg := model.Config{Frontends: fs}
			lastHTTP := memo.fixed.HTTP
			got := memo.View(cfg, o)
			want := HTTPListenerView(cfg, o)
			if !reflect.DeepEqual(got.Frontends, want.Frontends) {
				t.Fatalf("seed %d pass %d: the memo's view differs from the whole view:\n got %+v\nwant %+v", seed, pass, got.Frontends, want.Frontends)
			}
			if !changed && pass > 0 {
				if memo.Redone != 0 || memo.fixed.HTTP != lastHTTP {
					t.Fatalf("seed %d pass %d: nothing changed, yet %d parts built again (same table: %v)", seed, pass, memo.Redone, memo.fixed.HTTP == lastHTTP)
				}
			}
		}
	}
}

// A change to one Gateway among many builds that Gateway's part again,
// and those after it whose actions moved keep their host names.
func TestHTTPListenerMemoRedoesTheChanged(t *testing.T) {
	o := httpListenerOpts()
	var fs []model.Frontend
	for i := range 10 {
		addr := netip.AddrFrom4([4]byte{203, 0, 113, byte(10 + i)}).String()
		fs = append(fs, gatewayHTTP("gw_"+strconv.Itoa(i), addr, 80, "be", "a.example.com", "b.example.com"))
	}
	var memo HTTPListenerMemo
	memo.View(model.Config{Frontends: fs}, o)
	if memo.Redone != 10 {
		t.Fatalf("first view: %d parts built, want 10", memo.Redone)
	}
	for _, tc := range []struct {
		name   string
		change func(fs []model.Frontend)
		redone int
	}{
		{"nothing", func([]model.Frontend) {}, 0},
		{"the last Gateway's table", func(fs []model.Frontend) {
			fs[9] = gatewayHTTP("gw_9", "203.0.113.19", 80, "be2", "a.example.com")
		}, 1},
		{"the first Gateway gets an action: the others move", func(fs []model.Frontend) {
			f := gatewayHTTP("gw_0", "203.0.113.10", 80, "be", "a.example.com", "b.example.com")
			f.HTTP.Actions = append(f.HTTP.Actions, model.HTTPAction{Backends: []model.WeightedBackend{{Name: "be3", Weight: 1}}})
			fs[0] = f
		}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs = slices.Clone(fs)
			tc.change(fs)
			cfg := model.Config{Frontends: fs}
			got := memo.View(cfg, o)
			if memo.Redone != tc.redone {
				t.Errorf("%d parts built again, want %d", memo.Redone, tc.redone)
			}
			if want := HTTPListenerView(cfg, o); !reflect.DeepEqual(got.Frontends, want.Frontends) {
				t.Errorf("the memo's view differs from the whole view")
			}
		})
	}
}

// BenchmarkHTTPListenerPass is the fixed HTTP listener's table in a pass
// of N Gateways of 10 hosts each, one of which has a new table (the
// pass of a changed HTTPRoute) or none (a pass of anything else), the
// whole view (main's, HTTPListenerView) and the memo's side by side;
// "+maps": with the HTTP maps' memo lowering the table after it, as the
// driver's pass does (render.HTTPMapsMemo.Update). The pass's frontends
// (a new array and the changed Gateway) are made with the timer stopped.
// go test ./internal/render -run '^$' -bench BenchmarkHTTPListenerPass -benchmem -count 6 > out.txt
// benchstat -col /way out.txt
func BenchmarkHTTPListenerPass(b *testing.B) {
	o := httpListenerOpts()
	for _, n := range []int{1000} {
		gw := func(i, gen int) model.Frontend {
			var hosts []string
			for j := range 10 {
				hosts = append(hosts, "h"+strconv.Itoa(j)+".gw"+strconv.Itoa(i)+".example.com")
			}
			addr := netip.AddrFrom4([4]byte{203, 0, byte(113 + i/250), byte(1 + i%250)})
			return gatewayHTTP("gw_"+strconv.Itoa(i), addr.String(), 80, "be"+strconv.Itoa(gen), hosts...)
		}
		base := make([]model.Frontend, n)
		for i := range n {
			base[i] = gw(i, 0)
		}
		for _, change := range []string{"one", "none"} {
			for _, way := range []string{"whole", "memo", "whole+maps", "memo+maps"} {
				b.Run("n="+strconv.Itoa(n)+"/changed="+change+"/way="+way, func(b *testing.B) {
					var memo HTTPListenerMemo
					var maps HTTPMapsMemo
					view := func(cfg model.Config) model.Config {
						if way == "whole" || way == "whole+maps" {
							return HTTPListenerView(cfg, o)
						}
						return memo.View(cfg, o)
					}
					pass := func(cfg model.Config) {
						v := view(cfg)
						if way == "whole+maps" || way == "memo+maps" {
							maps.Update(v.Frontends[0].HTTP)
						}
					}
					pass(model.Config{Frontends: base})
					fs, gen := base, 0
					b.ReportAllocs()
					for b.Loop() {
						if change == "one" { // the pass's frontends, as desired's: not counted
							b.StopTimer()
							gen++
							fs = slices.Clone(fs)
							i := gen * 7 % n
							fs[i] = gw(i, gen)
							b.StartTimer()
						}
						pass(model.Config{Frontends: fs})
					}
				})
			}
		}
	}
}
