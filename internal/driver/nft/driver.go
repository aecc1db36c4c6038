package nft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/google/nftables"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

var (
	_ driver.Driver      = (*Driver)(nil)
	_ driver.Invalidator = (*Driver)(nil)
)

// Options configure the driver.
type Options struct {
	// NetNS is the network namespace (a path such as /run/netns/lb) the
	// table lives in; "" for the controller's own.
	NetNS string
	// EnableForwarding turns IP forwarding on (the documented
	// deployment); otherwise New fails with ErrForwarding when it is off.
	EnableForwarding bool
	Health           Health
	Logger           *slog.Logger

	// onBatch, when set (by tests), is told of each netlink batch sent
	// (each one transaction).
	onBatch func()
}

// Driver keeps the table in line with the UDP part of the model. It
// implements driver.Driver and ignores everything but Config.UDP.
type Driver struct {
	opts   Options
	ns     nsHandle
	conn   *nftables.Conn
	log    *slog.Logger
	prober *prober
	ctx    context.Context

	mu      sync.Mutex
	last    []model.UDPService        // the last desired UDP ports
	applied map[string]Service        // what the table holds; nil: unknown (read it back)
	aff     map[netip.AddrPort]string // the affinity dispatch maps' elements, with applied
	base    bool                      // the fixed objects and rules are in place
}

// New opens the driver. It checks IP forwarding, and starts the health
// probes, which run until ctx ends. The table is created or read back at
// the first Apply.
func New(ctx context.Context, opts Options) (*Driver, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ns, err := openNS(opts.NetNS)
	if err != nil {
		return nil, err
	}
	if err := ns.forwarding(opts.EnableForwarding, false); err != nil {
		ns.close()
		return nil, err
	}
	var copts []nftables.ConnOption
	if ns.f != nil {
		copts = append(copts, nftables.WithNetNSFd(ns.fd()))
	}
	conn, err := nftables.New(copts...)
	if err != nil {
		ns.close()
		return nil, fmt.Errorf("nftables: %w", err)
	}
	d := &Driver{opts: opts, ns: ns, conn: conn, log: opts.Logger, ctx: ctx}
	d.prober = newProber(opts.Health, ns.dial, d.healthChanged)
	context.AfterFunc(ctx, ns.close)
	return d, nil
}

// Apply makes the table hold cfg.UDP. A server change is one netlink
// batch; flows to servers that are gone are then deleted from conntrack.
func (d *Driver) Apply(ctx context.Context, cfg model.Config) (driver.Result, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.last = cfg.UDP
	probed := map[netip.Addr]bool{}
	for _, u := range cfg.UDP {
		if u.Probe {
			for _, s := range u.Servers {
				probed[s.Addr] = true
			}
		}
	}
	d.prober.track(d.ctx, probed)
	return d.sync()
}

// healthChanged re-applies the last desired state when a node's probe
// state flips.
func (d *Driver) healthChanged(a netip.Addr, down bool) {
	if down {
		d.log.Warn("UDP: node failing its health probe leaves the UDP ports", "node", a, "probe", d.opts.Health.Kind, "port", d.opts.Health.Port)
	} else {
		d.log.Info("UDP: node passing its health probe again returns to the UDP ports", "node", a)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.sync(); err != nil {
		d.log.Error("UDP: applying a health change failed; the next pass retries", "err", err)
	}
}

// sent is called for each netlink batch sent.
func (d *Driver) sent() {
	if d.opts.onBatch != nil {
		d.opts.onBatch()
	}
}

// ErrApply classifies a failed batch.
var ErrApply = errors.New("nftables batch failed")

// expiryRetries bounds the batches sync sends again after one failed
// for an element that was gone when it arrived.
const expiryRetries = 3

func (d *Driver) sync() (driver.Result, error) {
	start := time.Now()
	var want []Service
	var ops int
	for attempt := 1; ; attempt++ {
		if d.applied == nil {
			exists, applied, base, err := d.readBack()
			if err != nil {
				return driver.Result{}, fmt.Errorf("%w: reading table %s: %v", ErrApply, Table, err)
			}
			if !exists && len(d.last) == 0 {
				return driver.Result{}, nil // nothing to do, and nothing of ours in the kernel
			}
			d.applied, d.base = applied, base
			d.aff = d.readAffinityDispatch()
		}
		want = Plan(d.last, d.applied, d.prober.down)
		ops = d.queue(want)
		if ops == 0 {
			return driver.Result{}, nil
		}
		d.sent()
		err := d.conn.Flush()
		if err == nil {
			break
		}
		first := !d.base
		d.applied = nil
		if !first && errors.Is(err, syscall.ENOENT) && attempt < expiryRetries {
			// An affinity entry read for deletion timed out before the
			// batch came (the batch is atomic: nothing of it applied):
			// read the table again and send what is still to do.
			d.log.Debug("UDP: an element was gone when the batch came; reading the table again", "err", err, "attempt", attempt)
			continue
		}
		if !first {
			return driver.Result{}, fmt.Errorf("%w: %v", ErrApply, err)
		}
		// The table held something we could not read back consistently:
		// replace it whole, in one transaction.
		d.log.Warn("UDP: rebuilding the nftables table", "table", Table, "err", err)
		d.conn.DelTable(table)
		d.applied, d.aff = map[string]Service{}, nil
		ops = d.queue(want)
		d.sent()
		if err := d.conn.Flush(); err != nil {
			d.applied = nil
			return driver.Result{}, fmt.Errorf("%w: %v", ErrApply, err)
		}
		break
	}
	d.base = true
	prev := d.applied
	d.applied = make(map[string]Service, len(want))
	for _, s := range want {
		d.applied[s.Name] = s
	}
	d.aff = affinityElements(want)
	g := goneServers(prev, d.applied)
	n, err := d.ns.deleteFlows(g)
	if err != nil {
		d.log.Warn("UDP: deleting conntrack entries of removed servers failed", "err", err)
	}
	if nw := narrowed(prev, want); len(nw) > 0 {
		k, err := d.ns.deleteOutsiders(nw)
		if err != nil {
			d.log.Warn("UDP: deleting conntrack entries of sources no longer allowed failed", "err", err)
		}
		n += k
	}
	d.log.Debug("UDP: applied", "services", len(want), "ops", ops, "flows_deleted", n, "took", time.Since(start))
	return driver.Result{Runtime: time.Since(start), Ops: ops}, nil
}

// goneServers lists, per listen port, the servers that may have had flows
// before (in service or draining) and have none to keep now.
func goneServers(prev, next map[string]Service) []gone {
	var out []gone
	for name, p := range prev {
		n := next[name]
		keep := map[netip.AddrPort]bool{}
		if n.Port == p.Port {
			for _, s := range live(n) {
				keep[s] = true
			}
		}
		for _, s := range live(p) {
			if !keep[s] {
				out = append(out, gone{p.Port, s})
			}
		}
	}
	return out
}

func live(s Service) []netip.AddrPort { return slices.Concat(s.V4, s.V6, s.Drain) }

// queue adds to the connection's batch what turns d.applied into want,
// and returns the number of changes.
func (d *Driver) queue(want []Service) int {
	ops := 0
	if !d.base {
		ops += d.queueBase()
	}
	affAdds, n := d.affinityDispatch(d.aff, affinityElements(want))
	ops += n
	wanted := make(map[string]bool, len(want))
	oldPorts, newPorts := map[uint16]bool{}, map[uint16]bool{}
	for _, s := range d.applied {
		oldPorts[s.Port] = true
	}
	for _, s := range want {
		wanted[s.Name] = true
	}
	// Ports no longer wanted go first: a new port may take the address
	// and port (its dispatch entry) one of them leaves in this batch.
	for name, old := range d.applied {
		if wanted[name] {
			continue
		}
		d.dispatch(old, false)
		c := serviceChain(name)
		d.conn.FlushChain(c)
		d.conn.DelChain(c)
		d.conn.DelSet(serverMap(name, false))
		d.conn.DelSet(serverMap(name, true))
		if old.Restricted {
			d.conn.DelSet(srcSet(name, false))
			d.conn.DelSet(srcSet(name, true))
		}
		if old.Affinity > 0 {
			d.removeAffinity(name)
		}
		ops++
	}
	for _, s := range want {
		newPorts[s.Port] = true
		old, had := d.applied[s.Name]
		if !had {
			ops += d.addService(s)
			continue
		}
		if old.Port != s.Port || old.Any != s.Any || !slices.Equal(old.Addrs, s.Addrs) {
			d.dispatch(old, false)
			d.dispatch(s, true)
			ops++
		}
		ops += d.servers(s.Name, false, old.V4, s.V4) + d.servers(s.Name, true, old.V6, s.V6)
		ops += d.sources(old, s)
		ops += d.affinityChanges(old, s)
		busy := len(s.V4)+len(s.V6) > 0 // without servers, the balance makes no rule
		if old.stale || len(old.V4) != len(s.V4) || len(old.V6) != len(s.V6) || (busy && old.Balance != s.Balance) ||
			old.Restricted != s.Restricted || (old.Affinity > 0) != (s.Affinity > 0) || old.AffPort4 != s.AffPort4 || old.AffPort6 != s.AffPort6 {
			c := serviceChain(s.Name)
			d.conn.FlushChain(c)
			d.addRules(c, s)
			ops++
		}
		if old.Restricted && !s.Restricted { // once no rule uses them
			d.conn.DelSet(srcSet(s.Name, false))
			d.conn.DelSet(srcSet(s.Name, true))
		}
		if old.Affinity > 0 && s.Affinity <= 0 {
			d.removeAffinity(s.Name)
		}
	}
	ops += affAdds()
	var add, del []nftables.SetElement
	for p := range newPorts {
		if !oldPorts[p] {
			add = append(add, nftables.SetElement{Key: portKey(p)})
		}
	}
	for p := range oldPorts {
		if !newPorts[p] {
			del = append(del, nftables.SetElement{Key: portKey(p)})
		}
	}
	d.elements(portsSet(), add, del)
	return ops + len(add) + len(del)
}

func serviceChain(name string) *nftables.Chain { return &nftables.Chain{Name: name, Table: table} }

// queueBase (re)creates the table and its fixed objects, and replaces
// the fixed rules; elements already there are left alone.
func (d *Driver) queueBase() int {
	d.conn.AddTable(table)
	pre, post := baseChains()
	d.conn.AddChain(pre)
	d.conn.AddChain(post)
	for _, s := range []*nftables.Set{portsSet(), dispatchSet(mapAny), dispatchSet(mapAddr4), dispatchSet(mapAddr6),
		affinityDispatchSet(false), affinityDispatchSet(true)} {
		_ = d.conn.AddSet(s, nil) // errors only for anonymous sets
	}
	d.conn.FlushChain(pre)
	d.conn.FlushChain(post)
	for _, r := range preRules() {
		d.conn.AddRule(&nftables.Rule{Table: table, Chain: pre, Exprs: r})
	}
	for _, r := range postRules() {
		d.conn.AddRule(&nftables.Rule{Table: table, Chain: post, Exprs: r})
	}
	return 1
}

func (d *Driver) addService(s Service) int {
	c := d.conn.AddChain(serviceChain(s.Name))
	_ = d.conn.AddSet(serverMap(s.Name, false), indexedElements(s.V4))
	_ = d.conn.AddSet(serverMap(s.Name, true), indexedElements(s.V6))
	if s.Restricted {
		_ = d.conn.AddSet(srcSet(s.Name, false), srcElements(s.Src4))
		_ = d.conn.AddSet(srcSet(s.Name, true), srcElements(s.Src6))
	}
	if s.Affinity > 0 {
		d.addAffinity(s)
	}
	d.addRules(c, s)
	d.dispatch(s, true)
	return 1 + len(s.V4) + len(s.V6)
}

func (d *Driver) addRules(c *nftables.Chain, s Service) {
	for _, r := range serviceRuleExprs(s) {
		d.conn.AddRule(&nftables.Rule{Table: table, Chain: c, Exprs: r})
	}
}

// dispatch adds (or deletes) the verdict-map elements that send a port's
// datagrams to its chain.
func (d *Driver) dispatch(s Service, add bool) {
	var anyE, e4, e6 []nftables.SetElement
	if s.Any {
		anyE = append(anyE, nftables.SetElement{Key: portKey(s.Port), VerdictData: gotoChain(s.Name)})
	}
	for _, a := range s.Addrs {
		e := nftables.SetElement{Key: addrPort(a, s.Port), VerdictData: gotoChain(s.Name)}
		if a.Is4() {
			e4 = append(e4, e)
		} else {
			e6 = append(e6, e)
		}
	}
	for name, els := range map[string][]nftables.SetElement{mapAny: anyE, mapAddr4: e4, mapAddr6: e6} {
		if add {
			d.elements(dispatchSet(name), els, nil)
		} else {
			d.elements(dispatchSet(name), nil, els)
		}
	}
}

// servers updates a port's map of one family from old to want, index by
// index: an index whose server changed is deleted and added again in the
// same batch.
func (d *Driver) servers(name string, v6 bool, old, want []netip.AddrPort) int {
	var add, del []nftables.SetElement
	for i := range max(len(old), len(want)) {
		if i < len(old) && (i >= len(want) || old[i] != want[i]) {
			del = append(del, nftables.SetElement{Key: indexKey(i)})
		}
		if i < len(want) && (i >= len(old) || old[i] != want[i]) {
			add = append(add, nftables.SetElement{Key: indexKey(i), Val: addrPort(want[i].Addr(), want[i].Port())})
		}
	}
	d.elements(serverMap(name, v6), add, del)
	return len(add) + len(del)
}

func (d *Driver) elements(s *nftables.Set, add, del []nftables.SetElement) {
	if len(del) > 0 {
		_ = d.conn.SetDeleteElements(s, del) // errors only for anonymous sets
	}
	if len(add) > 0 {
		_ = d.conn.SetAddElements(s, add)
	}
}

func indexedElements(servers []netip.AddrPort) []nftables.SetElement {
	out := make([]nftables.SetElement, len(servers))
	for i, s := range servers {
		out[i] = nftables.SetElement{Key: indexKey(i), Val: addrPort(s.Addr(), s.Port())}
	}
	return out
}

// Cleanup deletes the table (`haproxy-k8s-sync cleanup --udp`).
func Cleanup(netnsPath string) error {
	ns, err := openNS(netnsPath)
	if err != nil {
		return err
	}
	defer ns.close()
	var copts []nftables.ConnOption
	if ns.f != nil {
		copts = append(copts, nftables.WithNetNSFd(ns.fd()))
	}
	conn, err := nftables.New(copts...)
	if err != nil {
		return err
	}
	if t, err := conn.ListTableOfFamily(Table, nftables.TableFamilyINet); err != nil || t == nil {
		return nil // nothing to delete
	}
	conn.DelTable(table)
	return conn.Flush()
}

// Invalidate forgets what the table holds: the next pass reads it back
// and corrects whatever changed behind the controller's back. The
// controller calls it every --resync-period.
func (d *Driver) Invalidate() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.applied = nil
}
