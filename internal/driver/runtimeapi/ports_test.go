package runtimeapi

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// A new frontend on a port another process holds (a listener without
// SO_REUSEPORT, as most programs open) is left out before any reload,
// with its backend unless another frontend uses it, and refused with
// ErrPortTaken; the rest of the model stays. A free port, a port the
// running config already binds and a port held with SO_REUSEPORT
// (HAProxy's own sockets) are not.
func TestWithoutTaken(t *testing.T) {
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otherPort := uint16(other.Addr().(*net.TCPAddr).Port)
	shared, err := (&net.ListenConfig{Control: reusePort}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	sharedPort := uint16(shared.Addr().(*net.TCPAddr).Port)
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := uint16(free.Addr().(*net.TCPAddr).Port)
	free.Close()

	lo := netip.MustParseAddr("127.0.0.1")
	fe := func(svc string, port uint16, backend string) model.Frontend {
		return model.Frontend{Name: "fe_" + svc, Service: "default/" + svc, Binds: []model.Bind{{Addr: lo, Port: port}}, Backend: backend}
	}
	names := func(c model.Config) (fes, bes []string) {
		for _, f := range c.Frontends {
			fes = append(fes, f.Name)
		}
		for _, b := range c.Backends {
			bes = append(bes, b.Name)
		}
		return fes, bes
	}
	backends := []*model.Backend{{Name: "_nodes"}, {Name: "be_a"}, {Name: "be_b"}, {Name: "be_shared"}}
	tests := []struct {
		name         string
		running      []model.Frontend
		want         []model.Frontend
		keptFE       []string
		keptBE       []string
		refusedNames []string
	}{
		{"free port", nil, []model.Frontend{fe("a", freePort, "be_a")},
			[]string{"fe_a"}, []string{"_nodes", "be_a", "be_b", "be_shared"}, nil},
		{"taken by another process: that frontend and its backend left out", nil,
			[]model.Frontend{fe("a", freePort, "be_a"), fe("b", otherPort, "be_b")},
			[]string{"fe_a"}, []string{"_nodes", "be_a", "be_shared"}, []string{"default/b"}},
		{"a backend another frontend uses stays", nil,
			[]model.Frontend{fe("a", freePort, "be_shared"), fe("b", otherPort, "be_shared")},
			[]string{"fe_a"}, []string{"_nodes", "be_a", "be_b", "be_shared"}, []string{"default/b"}},
		{"already ours", []model.Frontend{fe("b", otherPort, "be_b")}, []model.Frontend{fe("b", otherPort, "be_b")},
			[]string{"fe_b"}, []string{"_nodes", "be_a", "be_b", "be_shared"}, nil},
		{"held with SO_REUSEPORT", nil, []model.Frontend{fe("c", sharedPort, "be_a")},
			[]string{"fe_c"}, []string{"_nodes", "be_a", "be_b", "be_shared"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := model.Config{Frontends: tc.want, Backends: backends, Changes: &model.Changes{}}
			got, refused := withoutTaken(context.Background(), model.Config{Frontends: tc.running}, cfg, nil, render.Options{}.Listened)
			fes, bes := names(got)
			if !slices.Equal(fes, tc.keptFE) || !slices.Equal(bes, tc.keptBE) {
				t.Errorf("kept frontends %v backends %v, want %v %v", fes, bes, tc.keptFE, tc.keptBE)
			}
			var svcs []string
			for _, r := range refused {
				svcs = append(svcs, r.Service)
				if !errors.Is(r.Err, ErrPortTaken) || r.Reason != "PortTaken" {
					t.Errorf("refusal %+v: want ErrPortTaken, reason PortTaken", r)
				}
			}
			if !slices.Equal(svcs, tc.refusedNames) {
				t.Errorf("refused %v, want %v", svcs, tc.refusedNames)
			}
			if len(refused) > 0 && got.Changes != nil {
				t.Errorf("Changes kept after frontends were left out (its indices are the input's)")
			}
			if len(cfg.Frontends) != len(tc.want) || len(cfg.Backends) != len(backends) {
				t.Errorf("the input was modified")
			}
		})
	}
}

// A pass that adds one frontend to those running asks whether the
// listener serves that one only: the others are the same values as the
// running ones (the view keeps them), whose binds all run.
func TestWithoutTakenAsksOnlyNewFrontends(t *testing.T) {
	vip := netip.MustParseAddr("203.0.113.10")
	var running []model.Frontend
	for i := range 100 {
		running = append(running, model.Frontend{Name: fmt.Sprintf("fe_%03d", 2*i), Backend: "be",
			Binds: []model.Bind{{Addr: vip, Port: uint16(20000 + i), Transparent: true}}})
	}
	cfg := model.Config{Frontends: slices.Insert(slices.Clone(running), 51, // after fe_100
		model.Frontend{Name: "fe_101", Backend: "be", Binds: []model.Bind{{Addr: vip, Port: 30000, Transparent: true}}})}
	asked := 0
	listened := func(f model.Frontend) bool { asked++; return true }
	got, refused := withoutTaken(context.Background(), model.Config{Frontends: running}, cfg, nil, listened)
	if len(got.Frontends) != len(cfg.Frontends) || len(refused) > 0 {
		t.Fatalf("kept %d frontends of %d, refused %v", len(got.Frontends), len(cfg.Frontends), refused)
	}
	if asked != 1 {
		t.Errorf("listened asked of %d frontends, want 1 (the new one)", asked)
	}
}

func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}

// changedFrontends from the view's FrontChanges gives what the walk of
// both passes gives, over random passes (frontends added, removed,
// changed; the names said hold more than changed, as the view's may);
// a FrontChanges from another pass's frontends is not taken.
func TestChangedFrontendsRandom(t *testing.T) {
	vip := netip.MustParseAddr("203.0.113.10")
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 29))
			var running []model.Frontend
			for i := range 40 {
				running = append(running, model.Frontend{Name: fmt.Sprintf("fe_%03d", 2*i), Backend: "be",
					Binds: []model.Bind{{Addr: vip, Port: uint16(20000 + i)}}})
			}
			collect := func(s iter.Seq[int]) []int { return slices.Collect(s) }
			named, stale := 0, 0
			for pass := range 300 {
				cfg := slices.Clone(running)
				for range 1 + r.IntN(3) {
					switch i := r.IntN(len(cfg)); r.IntN(3) {
					case 0: // a new frontend
						name := fmt.Sprintf("fe_%03d_%d", r.IntN(80), pass)
						j, found := model.FrontendIndex(cfg, name)
						if !found {
							cfg = slices.Insert(cfg, j, model.Frontend{Name: name, Backend: "be",
								Binds: []model.Bind{{Addr: vip, Port: uint16(30000 + pass)}}})
						}
					case 1:
						if len(cfg) > 5 {
							cfg = slices.Delete(cfg, i, i+1)
						}
					case 2: // changed
						cfg[i].Binds = []model.Bind{{Addr: vip, Port: uint16(40000 + pass)}}
					}
				}
				names := model.ChangedFrontends(running, cfg)
				for range r.IntN(3) { // more than changed
					names = append(names, cfg[r.IntN(len(cfg))].Name)
				}
				slices.Sort(names)
				names = slices.Compact(names)
				whole := collect(changedFrontends(running, cfg, nil))
				fc := &model.FrontendChanges{Base: running, Of: cfg, Names: names}
				if got := collect(changedFrontends(running, cfg, fc)); !slices.Equal(got, whole) {
					t.Fatalf("pass %d: by name %v, the walk %v", pass, got, whole)
				}
				named++
				// Said against another pass's frontends (a pass that
				// failed, a view made twice): the walk.
				other := &model.FrontendChanges{Base: slices.Clone(running), Of: cfg, Names: names[:len(names)/2]}
				if got := collect(changedFrontends(running, cfg, other)); !slices.Equal(got, whole) {
					t.Fatalf("pass %d: from another base %v, the walk %v", pass, got, whole)
				}
				if len(names)/2 < len(names) {
					stale++
				}
				running = cfg
			}
			if named == 0 || stale == 0 {
				t.Fatalf("by name %d, stale %d passes", named, stale)
			}
		})
	}
}
