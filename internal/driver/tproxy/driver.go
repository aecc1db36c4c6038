package tproxy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netns"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

var (
	_ driver.Driver      = (*Driver)(nil)
	_ driver.Invalidator = (*Driver)(nil)
)

// Options configure the driver.
type Options struct {
	// NetNS is the network namespace (a path such as /run/netns/lb) of
	// the table and the policy routing; "" for the controller's own.
	NetNS string
	// Render are HAProxy's render options: which frontends are listened
	// (render.Options.Listened) and the listener's port.
	Render render.Options
	// Mark, RouteTable and RulePriority of the policy routing (0: the
	// defaults).
	Mark                     uint32
	RouteTable, RulePriority int
	Logger                   *slog.Logger
}

func (o *Options) defaults() {
	if o.Mark == 0 {
		o.Mark = DefaultMark
	}
	if o.RouteTable == 0 {
		o.RouteTable = DefaultRouteTable
	}
	if o.RulePriority == 0 {
		o.RulePriority = DefaultRulePrio
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Driver keeps the table's sets in line with the listened binds of the
// model. It ignores everything else.
type Driver struct {
	opts Options
	nsf  *os.File
	ns   netns.NsHandle
	conn *nftables.Conn
	rt   routing

	mu      sync.Mutex
	applied map[netip.AddrPort]bool // what the sets hold; nil: unknown (read it back)
	// wants: the elements of the last model's frontends, kept by
	// frontend, and those the sets may not hold as wanted (wantset.go):
	// a pass's Remove and Apply look at those only.
	wants wantSet
	// appliedHTTP and httpWants: the same for the fixed HTTP listener's
	// sets (httpsets.go), with the HTTP listener on.
	appliedHTTP map[netip.AddrPort]bool
	httpWants   wantSet
	// appliedHTTPS: the fixed HTTPS listener's sets (httpssets.go), with
	// the HTTPS listener on; their wants are taken whole each pass.
	appliedHTTPS map[netip.AddrPort]bool
	// served: the addresses of all those, whose other ports are refused
	// (served.go).
	served servedAddrs
}

// ErrApply classifies a failed batch or policy routing change.
var ErrApply = errors.New("tproxy: nftables or policy routing change failed")

// New opens the driver and puts the policy routing in place. The table is
// created or read back at the first Apply.
func New(opts Options) (*Driver, error) {
	opts.defaults()
	d := &Driver{opts: opts, ns: netns.None(), httpWants: wantSet{http: true},
		rt: routing{mark: opts.Mark, table: opts.RouteTable, prio: opts.RulePriority}}
	var copts []nftables.ConnOption
	if opts.NetNS != "" {
		f, err := os.Open(opts.NetNS)
		if err != nil {
			return nil, fmt.Errorf("network namespace: %w", err)
		}
		d.nsf, d.ns = f, netns.NsHandle(int(f.Fd()))
		copts = append(copts, nftables.WithNetNSFd(int(f.Fd())))
	}
	conn, err := nftables.New(copts...)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("nftables: %w", err)
	}
	d.conn = conn
	if err := d.rt.ensure(d.ns); err != nil {
		d.Close()
		return nil, fmt.Errorf("%w: %v", ErrApply, err)
	}
	return d, nil
}

// Close releases the namespace.
func (d *Driver) Close() {
	if d.nsf != nil {
		d.nsf.Close()
	}
}

// Apply makes the sets hold the listened binds of cfg, in as few batches
// as the kernel's limits allow (batch.go). The frontends ctx says changed
// (driver.WithFrontChanges) are the only ones looked at when they can be.
func (d *Driver) Apply(ctx context.Context, cfg model.Config) (driver.Result, error) {
	return d.apply(cfg, driver.FrontChangesOf(ctx), func(netip.AddrPort) bool { return true }, false)
}

// Remove deletes the elements cfg no longer has, adding none: what runs
// before HAProxy's driver takes a map entry away (Ordered). An HTTPS
// element whose frontend leaves the fixed listener for a bind of its own
// stays (httpsOps): its map entry and line stay in the running worker
// until the reload that binds it.
func (d *Driver) Remove(ctx context.Context, cfg model.Config) (driver.Result, error) {
	return d.apply(cfg, driver.FrontChangesOf(ctx), func(netip.AddrPort) bool { return false }, true)
}

// ApplyServed is Apply adding only the elements served listens too: the
// binds of cfg whose map entries a HAProxy serving served holds, when it
// applied part of cfg (Ordered). Elements cfg no longer has are deleted.
func (d *Driver) ApplyServed(cfg, served model.Config) (driver.Result, error) {
	v4, v6 := Elements(served, d.opts.Render)
	h4, h6 := HTTPElements(served, d.opts.Render)
	s4, s6 := HTTPSElements(served, d.opts.Render)
	in := make(map[netip.AddrPort]bool, len(v4)+len(v6)+len(h4)+len(h6)+len(s4)+len(s6))
	for _, e := range slices.Concat(v4, v6, h4, h6, s4, s6) {
		in[e] = true
	}
	return d.apply(cfg, nil, func(e netip.AddrPort) bool { return in[e] }, true) // cfg taken by Remove already
}

// apply deletes the elements cfg lacks and adds those of cfg that add
// lets in; fronts: which of cfg's frontends changed against the last
// pass's (nil: unknown).
func (d *Driver) apply(cfg model.Config, fronts *model.FrontendChanges, add func(netip.AddrPort) bool, moving bool) (driver.Result, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	start := time.Now()
	d.wants.update(cfg, fronts, d.opts.Render) // wantset.go: by the frontends that changed
	httpOn := d.opts.Render.HTTPListener()
	if httpOn {
		d.httpWants.update(cfg, fronts, d.opts.Render)
	}
	ops := 0
	if d.applied == nil {
		// After a start or an Invalidate: the policy routing again (it
		// may have been removed behind our back), the fixed objects and
		// rules rewritten, the elements read back.
		if err := d.rt.ensure(d.ns); err != nil {
			return driver.Result{}, fmt.Errorf("%w: %v", ErrApply, err)
		}
		d.readBackAll()
		if !d.baseInPlace() {
			d.queueBase()
			ops++
		}
	}
	kinds := []setOps{elementOps(&d.wants, d.applied, add)} // httpsets.go
	if httpOn {
		kinds = append(kinds, elementOps(&d.httpWants, d.appliedHTTP, add))
	}
	httpsOn := d.opts.Render.HTTPSListener()
	if httpsOn {
		kinds = append(kinds, httpsOps(cfg, d.opts.Render, d.appliedHTTPS, add, moving)) // httpssets.go
	}
	var bs [][]elemOp
	for _, k := range kinds {
		ops += k.n
		bs = append(bs, k.batches()...)
	}
	if ops == 0 && d.served.refs != nil {
		return driver.Result{}, nil
	}
	// The first batch carries the fixed objects when they are queued.
	for i := 0; i < max(1, len(bs)); i++ {
		if i < len(bs) {
			for _, op := range bs[i] {
				if op.del {
					_ = d.conn.SetDeleteElements(elementSet(op.v6, op.kind), op.els)
				} else {
					_ = d.conn.SetAddElements(elementSet(op.v6, op.kind), op.els)
				}
			}
		}
		if err := d.conn.Flush(); err != nil {
			d.applied = nil
			return driver.Result{}, fmt.Errorf("%w: batch %d of %d: %v", ErrApply, i+1, max(1, len(bs)), err)
		}
	}
	kinds[0].record(d.applied)
	if httpOn {
		kinds[1].record(d.appliedHTTP)
		d.httpWants.settled(d.appliedHTTP)
	}
	if httpsOn {
		kinds[len(kinds)-1].record(d.appliedHTTPS)
	}
	d.wants.settled(d.applied)
	if err := d.flushServed(d.served.ops(d, kinds)); err != nil { // served.go
		return driver.Result{}, fmt.Errorf("%w: the served addresses: %v", ErrApply, err)
	}
	took := time.Since(start)
	d.opts.Logger.Debug("tproxy: applied", "elements", len(d.applied), "http_elements", len(d.appliedHTTP),
		"https_elements", len(d.appliedHTTPS), "ops", ops, "took", took)
	return driver.Result{Runtime: took, Ops: ops}, nil
}

// Setup puts the policy routing and the table's fixed objects and rules
// in place and reads the sets back, leaving their elements as they are
// (so a restarted controller's probe drops no connection). An error
// says the controller cannot set TPROXY up here: no CAP_NET_ADMIN, no
// nftables or TPROXY expression in the kernel, no policy routing.
func (d *Driver) Setup() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.rt.ensure(d.ns); err != nil {
		return fmt.Errorf("%w: policy routing: %v", ErrApply, err)
	}
	d.readBackAll()
	if d.baseInPlace() {
		return nil
	}
	d.queueBase()
	if err := d.conn.Flush(); err != nil {
		d.applied = nil
		return fmt.Errorf("%w: table inet %s: %v", ErrApply, Table, err)
	}
	return nil
}

// queueBase (re)creates the table, its sets and chains, and replaces the
// chains' rules; the sets' elements are left alone.
func (d *Driver) queueBase() {
	d.conn.AddTable(table)
	kinds := d.setKinds()
	for _, k := range kinds {
		for _, v6 := range []bool{false, true} {
			_ = d.conn.AddSet(elementSet(v6, k), nil) // errors only for anonymous sets
		}
	}
	for _, v6 := range []bool{false, true} {
		_ = d.conn.AddSet(servedSet(v6), nil)
	}
	pre, out := chains()
	refuse := refuseChain()
	for _, c := range []*nftables.Chain{pre, out, refuse} {
		d.conn.AddChain(c)
		d.conn.FlushChain(c)
	}
	for _, k := range kinds {
		port := d.listenerPort(k)
		for _, v6 := range []bool{false, true} {
			d.conn.AddRule(&nftables.Rule{Table: table, Chain: pre, Exprs: preRule(v6, k, port, d.opts.Mark)})
			d.conn.AddRule(&nftables.Rule{Table: table, Chain: out, Exprs: outRule(v6, k, d.opts.Mark)})
		}
	}
	for _, v6 := range []bool{false, true} {
		d.conn.AddRule(&nftables.Rule{Table: table, Chain: pre, Exprs: refuseRule(v6, 0)})
		d.conn.AddRule(&nftables.Rule{Table: table, Chain: refuse, Exprs: refuseRule(v6, d.opts.Mark)})
	}
}

// setKinds are the listeners whose sets the table has: the TCP one's,
// the HTTP one's with the HTTP listener on, the HTTPS one's with that on.
func (d *Driver) setKinds() []setKind {
	kinds := []setKind{kindTCP}
	if d.opts.Render.HTTPListener() {
		kinds = append(kinds, kindHTTP)
	}
	if d.opts.Render.HTTPSListener() {
		kinds = append(kinds, kindHTTPS)
	}
	return kinds
}

// listenerPort is the port a listener binds.
func (d *Driver) listenerPort(k setKind) uint16 {
	switch k {
	case kindHTTP:
		return d.opts.Render.HTTPListenerPort()
	case kindHTTPS:
		return d.opts.Render.HTTPSListenerPort()
	}
	return d.opts.Render.ListenerPort()
}

// baseInPlace reports whether the table's chains hold the rules
// queueBase writes (by count, the listener's port and the mark; the
// refusals last), so that a pass after a resync changes nothing when
// nothing changed.
func (d *Driver) baseInPlace() bool {
	pre, out := chains()
	kinds := d.setKinds()
	if rules, err := d.conn.GetRules(table, refuseChain()); err != nil || len(rules) != 2 || !isRefuse(rules[0]) || !isRefuse(rules[1]) {
		return false
	}
	for _, c := range []*nftables.Chain{pre, out} {
		rules, err := d.conn.GetRules(table, c)
		want := 2 * len(kinds)
		if c == pre {
			want += 2 // the refusals
		}
		if err != nil || len(rules) != want {
			return false
		}
		if c == pre {
			if !isRefuse(rules[want-2]) || !isRefuse(rules[want-1]) {
				return false
			}
			rules = rules[:want-2]
		}
		for i, r := range rules {
			want := d.listenerPort(kinds[i/2]) // queueBase's order
			port, mark := false, false
			for _, e := range r.Exprs {
				switch x := e.(type) {
				case *expr.Immediate:
					port = port || (len(x.Data) == 2 && binary.BigEndian.Uint16(x.Data) == want)
					mark = mark || (len(x.Data) == 4 && binaryutil.NativeEndian.Uint32(x.Data) == d.opts.Mark)
				}
			}
			if !mark || (c == pre && !port) {
				return false
			}
		}
	}
	return true
}

// Invalidate forgets what the table holds: the next pass reads it back,
// and puts the rules and the policy routing back in place.
func (d *Driver) Invalidate() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.applied = nil
}
