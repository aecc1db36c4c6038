package announce

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

type recorder struct {
	mu    sync.Mutex
	wants []Want
}

func (r *recorder) Set(w Want)                { r.mu.Lock(); r.wants = append(r.wants, w); r.mu.Unlock() }
func (r *recorder) Run(context.Context) error { return nil }
func (r *recorder) last() Want {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.wants) == 0 {
		return Want{}
	}
	return r.wants[len(r.wants)-1]
}

func TestAddresses(t *testing.T) {
	a, b, c := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("192.0.2.9")
	cfg := model.Config{
		Frontends: []model.Frontend{{Binds: []model.Bind{{Addr: a, Port: 80}, {Addr: b, Port: 80}}}, {Binds: []model.Bind{{Addr: a, Port: 443}, {Port: 8080}}}},
		UDP:       []model.UDPService{{Binds: []model.Bind{{Addr: c, Port: 53}}}},
	}
	if got, want := Addresses(cfg), []netip.Addr{c, a, b}; !slices.Equal(got, want) {
		t.Fatalf("%v, want %v (every address once, none for 'all addresses')", got, want)
	}
}

func TestDriverGate(t *testing.T) {
	r := &recorder{}
	d := NewDriver(r)
	a := netip.MustParseAddr("192.0.2.10")
	cfg := model.Config{Frontends: []model.Frontend{{Binds: []model.Bind{{Addr: a, Port: 80}}}}}
	if _, err := d.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if w := r.last(); w.Healthy || !slices.Equal(w.Addrs, []netip.Addr{a}) {
		t.Fatalf("before the gate: %+v, want the address, unhealthy", w)
	}
	var mu sync.Mutex
	var fail error
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs haproxytest.LockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	go d.Gate(ctx, 5*time.Millisecond, func(context.Context) error { mu.Lock(); defer mu.Unlock(); return fail }, log)
	wait := func(healthy bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for r.last().Healthy != healthy {
			if time.Now().After(deadline) {
				t.Fatalf("never healthy=%v", healthy)
			}
			time.Sleep(time.Millisecond) // polling, bounded by the deadline
		}
	}
	wait(true)
	mu.Lock()
	fail = errors.New("HAProxy does not answer")
	mu.Unlock()
	wait(false)
	if w := r.last(); !slices.Equal(w.Addrs, []netip.Addr{a}) {
		t.Fatalf("unhealthy: %+v, the addresses kept", w)
	}
	mu.Lock()
	fail = nil
	mu.Unlock()
	wait(true)
	cancel()
	// each change of the verdict logged once, a failure with its why
	want := []string{"health gate passes", "health gate fails", "health gate passes"}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		switch {
		case strings.Contains(l, "health gate passes"):
			got = append(got, "health gate passes")
		case strings.Contains(l, "health gate fails"):
			got = append(got, "health gate fails")
			if !strings.Contains(l, `why="HAProxy does not answer"`) {
				t.Errorf("the failure logged without its why: %s", l)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("logged %q, want %q:\n%s", got, want, logs.String())
	}
}
