package layer2

import (
	"context"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
)

// The interface's work (addresses put on and taken off, their lifetimes
// renewed, gratuitous ARPs and unsolicited advertisements) is done by a
// worker of its own, off the heartbeat loop: the loop only decides which
// addresses this host holds and hands the worker the newest decision
// (ifaceJob), so a host holding hundreds of addresses still sends its
// heartbeats on time however long the interface takes. Decisions the
// worker has not reached yet are not queued one by one: the newest set
// to hold replaces the older (addresses to drop accumulate), and a
// newer decision interrupts a batch of takes or renewals, so a release
// waits for at most one netlink call.

// ifaceJob is what the loop asks of the interface.
type ifaceJob struct {
	// hold: the addresses to have on the interface, sorted
	hold []netip.Addr
	// drop: addresses of earlier runs to take off unless held (they
	// accumulate until the worker takes the job)
	drop map[netip.Addr]bool
	// final: the loop has ended; release everything, or with keep > 0
	// leave what is held with that lifetime (a restart, restart.go)
	final bool
	keep  time.Duration
	// again: held addresses to announce again, repeats and all (a peer
	// claimed them too; they accumulate as drop does)
	again map[netip.Addr]bool
}

// worker is the interface's side of the announcer.
type worker struct {
	link     *link
	log      *slog.Logger
	interval time.Duration
	refresh  time.Duration
	lifetime time.Duration
	repeats  int
	metrics  announce.Recorder

	mu      sync.Mutex
	pending *ifaceJob
	// held: what is on the interface, as of the last job (holding)
	held []netip.Addr
	wake chan struct{}
	done chan struct{}

	// owned by run
	on      map[netip.Addr]*garp
	renewAt time.Time
}

type garp struct {
	next time.Time
	left int
}

func newWorker(l *link, cfg Config, log *slog.Logger) *worker {
	return &worker{link: l, log: log, interval: cfg.Interval, refresh: cfg.Refresh, lifetime: cfg.Lifetime,
		repeats: cfg.Repeats, metrics: cfg.Metrics, wake: make(chan struct{}, 1), done: make(chan struct{}),
		on: map[netip.Addr]*garp{}}
}

// put hands the worker the addresses to hold now, addresses to drop
// unless held, and held addresses to announce again; it never blocks.
func (w *worker) put(hold []netip.Addr, drop []netip.Addr, again ...netip.Addr) {
	w.mu.Lock()
	if w.pending == nil {
		w.pending = &ifaceJob{drop: map[netip.Addr]bool{}, again: map[netip.Addr]bool{}}
	}
	w.pending.hold = hold
	for _, a := range drop {
		w.pending.drop[a] = true
	}
	for _, a := range again {
		w.pending.again[a] = true
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// finish asks the worker for its last job (see ifaceJob.final) and waits
// for it, at most within.
func (w *worker) finish(keep, within time.Duration) {
	w.mu.Lock()
	if w.pending == nil {
		w.pending = &ifaceJob{drop: map[netip.Addr]bool{}, again: map[netip.Addr]bool{}}
	}
	w.pending.final, w.pending.keep = true, keep
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	select {
	case <-w.done:
	case <-time.After(within):
		w.log.Warn("the interface's worker did not finish", "within", within)
	}
}

// newer is whether a job is waiting.
func (w *worker) newer() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pending != nil
}

func (w *worker) take() *ifaceJob {
	w.mu.Lock()
	defer w.mu.Unlock()
	j := w.pending
	w.pending = nil
	return j
}

// run works until its final job is done, or until ctx ends (abandoned:
// nothing is undone).
func (w *worker) run(ctx context.Context) {
	defer close(w.done)
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
			j := w.take()
			if j == nil {
				continue
			}
			if j.final {
				w.last(j.keep)
				return
			}
			w.apply(j)
		case <-tick.C:
			w.due(time.Now())
		}
	}
}

// apply takes off what is no longer held, then puts on what is new and
// announces it, stopping early when a newer job waits (the next one
// finishes it).
func (w *worker) apply(j *ifaceJob) {
	before := len(w.on)
	changed := false
	defer func() {
		if changed || len(w.on) != before {
			w.publish()
		}
	}()
	hold := make(map[netip.Addr]bool, len(j.hold))
	for _, a := range j.hold {
		hold[a] = true
	}
	for a := range w.on {
		if !hold[a] {
			delete(w.on, a)
			changed = true
			if err := w.link.drop(a); err != nil {
				w.log.Warn("dropping an address", "address", a, "error", err)
			}
		}
	}
	for a := range j.drop {
		if !hold[a] {
			if err := w.link.drop(a); err != nil {
				w.log.Warn("dropping an address left over", "address", a, "error", err)
			}
		}
	}
	for _, a := range j.hold {
		if _, on := w.on[a]; on {
			continue
		}
		if w.newer() {
			return
		}
		if err := w.link.hold(a, w.lifetime); err != nil {
			w.log.Warn("taking an address", "address", a, "error", err)
			continue
		}
		if err := w.link.announce(a); err != nil {
			w.log.Warn("announcing an address", "address", a, "error", err)
		}
		w.on[a] = &garp{next: time.Now().Add(w.interval), left: w.repeats - 1}
	}
	for a := range j.again {
		g, on := w.on[a]
		if !on {
			continue
		}
		if err := w.link.announce(a); err != nil {
			w.log.Warn("announcing an address", "address", a, "error", err)
		}
		g.next, g.left = time.Now().Add(w.interval), w.repeats-1
	}
}

// due renews the lifetimes when it is time, and announces the addresses
// whose next announcement is due.
func (w *worker) due(now time.Time) {
	if now.After(w.renewAt) {
		for a := range w.on {
			if w.newer() {
				return
			}
			if err := w.link.hold(a, w.lifetime); err != nil {
				w.log.Warn("renewing an address", "address", a, "error", err)
			}
		}
		w.renewAt = now.Add(w.lifetime / 3)
	}
	for a, g := range w.on {
		if now.Before(g.next) {
			continue
		}
		if w.newer() {
			return
		}
		if err := w.link.announce(a); err != nil {
			w.log.Warn("announcing an address", "address", a, "error", err)
		}
		if g.left > 0 {
			g.left--
			g.next = now.Add(w.interval)
		} else {
			g.next = now.Add(w.refresh)
		}
	}
}

// last is the final job: every address taken off, or, with keep > 0,
// left on with a lifetime of keep (the next run adopts them, or they
// lapse).
func (w *worker) last(keep time.Duration) {
	for a := range w.on {
		var err error
		if keep > 0 {
			err = w.link.hold(a, keep)
		} else {
			err = w.link.drop(a)
		}
		if err != nil {
			w.log.Warn("leaving an address", "address", a, "kept", keep > 0, "error", err)
		}
	}
	if keep <= 0 {
		clear(w.on)
		w.publish()
	}
}

// publish tells the metrics and holding what is on the interface now.
func (w *worker) publish() {
	held := slices.SortedFunc(maps.Keys(w.on), netip.Addr.Compare)
	w.metrics.Addresses(len(held))
	w.metrics.Held(held)
	w.mu.Lock()
	w.held = held
	w.mu.Unlock()
}

// holding is what the worker has put on the interface and not taken off
// yet, sorted: what this host serves, which the loop's decision runs
// ahead of (a release is decided, and told to the others, before the
// address is off the interface; a take before it is on).
func (w *worker) holding() []netip.Addr {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.held)
}

// heartbeatBuffer is the heartbeat socket's receive buffer: a heartbeat
// of a host holding hundreds of addresses is tens of kilobytes, some
// twenty IP fragments whose buffers count twice its size, so the
// kernel's default (about 200 kB) holds only a few; a reader kept
// waiting a few hundred milliseconds by a loaded machine would lose
// the next ones, and three lost in a row look like the sender's death.
const heartbeatBuffer = 8 << 20

// readBuffer sets the heartbeat socket's receive buffer to
// heartbeatBuffer: beyond net.core.rmem_max with CAP_NET_ADMIN (which
// the announcer has), else as far as rmem_max allows.
func readBuffer(c *net.UDPConn) {
	forced := false
	if raw, err := c.SyscallConn(); err == nil {
		_ = raw.Control(func(fd uintptr) {
			forced = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, heartbeatBuffer) == nil
		})
	}
	if !forced {
		_ = c.SetReadBuffer(heartbeatBuffer)
	}
}
