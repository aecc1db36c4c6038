package announce

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Addresses is what a model asks the network to reach: the addresses its
// frontends and UDP ports bind (not "every address"), sorted, once each.
func Addresses(cfg model.Config) []netip.Addr {
	var out []netip.Addr
	for _, f := range cfg.Frontends {
		for _, b := range f.Binds {
			out = append(out, b.Addr)
		}
	}
	for _, u := range cfg.UDP {
		for _, b := range u.Binds {
			out = append(out, b.Addr)
		}
	}
	return Want{Addrs: out}.Normal().Addrs
}

// Driver is an Announcer behind the drivers' contract, a sibling of
// HAProxy's and the kernel's: each model applied tells the announcer its
// addresses (Addresses), and the health gate (Gate) whether this host
// may serve them. It never fails a pass.
type Driver struct {
	a       Announcer
	static  []netip.Addr
	mu      sync.Mutex
	addrs   []netip.Addr
	healthy bool
}

var _ driver.Driver = (*Driver)(nil)

// NewDriver hands a's Wants from the models applied, with static (the
// addresses published for every Service) besides; the host counts as
// unhealthy until Gate says otherwise.
func NewDriver(a Announcer, static ...netip.Addr) *Driver { return &Driver{a: a, static: static} }

// Apply implements driver.Driver.
func (d *Driver) Apply(_ context.Context, cfg model.Config) (driver.Result, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addrs = Want{Addrs: append(Addresses(cfg), d.static...)}.Normal().Addrs
	d.a.Set(Want{Addrs: d.addrs, Healthy: d.healthy})
	return driver.Result{}, nil
}

// SetHealthy is the health gate's answer.
func (d *Driver) SetHealthy(ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ok == d.healthy {
		return
	}
	d.healthy = ok
	d.a.Set(Want{Addrs: d.addrs, Healthy: ok})
}

// Gate asks check every period until ctx ends: the host is healthy while
// it answers nil. Each change of the verdict is logged, a failure with
// check's error (which names the part that failed), so that an address
// let go for this host's health says why.
func (d *Driver) Gate(ctx context.Context, every time.Duration, check func(context.Context) error, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	first := true
	for {
		cctx, cancel := context.WithTimeout(ctx, every)
		err := check(cctx)
		cancel()
		if ok := err == nil; ctx.Err() == nil && (first || ok != d.isHealthy()) {
			first = false
			if ok {
				log.Info("health gate passes: this host may serve its addresses")
			} else {
				log.Warn("health gate fails: this host lets its addresses go", "why", err.Error())
			}
		}
		d.SetHealthy(err == nil)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (d *Driver) isHealthy() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.healthy
}

// Holders is who announces each address as this host knows it (its
// announcer's Reporter), nil when the announcer does not say.
func (d *Driver) Holders(ctx context.Context) Holders {
	if r, ok := d.a.(Reporter); ok {
		return r.Holders(ctx)
	}
	return nil
}
