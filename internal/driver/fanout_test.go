package driver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// part records what it was given; a small stand-in for a data path.
type part struct {
	got     []model.Config
	res     Result
	err     error
	drift   bool
	invalid int
}

func (p *part) Apply(_ context.Context, cfg model.Config) (Result, error) {
	p.got = append(p.got, cfg)
	return p.res, p.err
}

type verifying struct{ *part }

func (v verifying) Verify(context.Context) (bool, error) { return v.drift, nil }

type invalidating struct{ *part }

func (v invalidating) Invalidate() { v.invalid++ }

func TestFanout(t *testing.T) {
	tcp := &part{res: Result{Reloaded: true, Ops: 2}, err: ErrDeferred, drift: true}
	udp := &part{res: Result{Ops: 3}, err: errors.New("nftables batch failed")}
	f := Fanout{verifying{tcp}, invalidating{udp}}
	cfg := model.Config{UDP: []model.UDPService{{Name: "udp_a_b_53"}}}
	res, err := f.Apply(context.Background(), cfg)
	if len(tcp.got) != 1 || len(udp.got) != 1 || len(udp.got[0].UDP) != 1 {
		t.Fatalf("each driver gets the whole model once: tcp %v, udp %v", tcp.got, udp.got)
	}
	if !res.Reloaded || res.Ops != 5 {
		t.Errorf("result %+v: want the first's reload and the sum of ops", res)
	}
	if !errors.Is(err, ErrDeferred) || err == nil || !containsErr(err, udp.err) {
		t.Errorf("error %v: want both", err)
	}
	drift, err := f.Verify(context.Background())
	if !drift || err != nil || udp.invalid != 1 {
		t.Errorf("Verify = %v, %v; invalidated %d", drift, err, udp.invalid)
	}
}

// TestFanoutAgain: a pass comes back as soon as the first driver with
// work under way asks.
func TestFanoutAgain(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b time.Duration
		want time.Duration
	}{
		{"none", 0, 0, 0},
		{"the first", 250 * time.Millisecond, 0, 250 * time.Millisecond},
		{"another", 0, time.Second, time.Second},
		{"the soonest", time.Second, 250 * time.Millisecond, 250 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Fanout{&part{res: Result{Again: tc.a}}, &part{res: Result{Again: tc.b}}}
			if res, err := f.Apply(context.Background(), model.Config{}); err != nil || res.Again != tc.want {
				t.Errorf("Again = %v, %v; want %v", res.Again, err, tc.want)
			}
		})
	}
}

func containsErr(err, target error) bool { return errors.Is(err, target) }
