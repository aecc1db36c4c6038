package render

import (
	"fmt"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// FDs is what HAProxy 2.6 reserves in file descriptors for a config
// before it serves anything: it sets its open-file limit to the sum
// (global.maxsock) and refuses to start or reload, with `[ALERT] Cannot
// raise FD limit to N, limit is L`, when the limit it may raise to (its
// hard limit, unless it may raise that too) is lower. `haproxy -c` checks
// none of this. The rule, from its src/haproxy.c, cfgparse.c, cli.c and
// check.c, measured on 2.6.12: 10 of its own; one per listener (a bind
// of a frontend, the stats socket, the master CLI and each worker's
// socket pair to it, a peer); the connections of the stats socket and
// the master CLI (10 each) and of the peers section (3 for the local
// peer alone); one per server with a check or an agent, disabled or not,
// and one per "port" or "agent-port" keyword HAProxy parses (once on a
// default-server line, once per server line that carries it); three per
// thread; and two per connection of the global maxconn.
type FDs struct {
	Own       int // HAProxy's own: 10, the CLI connections, 3 per thread
	Listeners int
	Checks    int // servers with a check or an agent, and their ports
	// MaxConn is the global maxconn counted twice: the configured one,
	// or with none the least HAProxy computes for itself (it otherwise
	// takes what the limit leaves, MaxConnFor).
	MaxConn int
	// Auto: no global maxconn is configured.
	Auto bool
}

// HAProxy 2.6's constants of the rule (FDs).
const (
	fdsReserved    = 10  // global.maxsock's start
	fdsCLIConns    = 10  // the stats socket's and the master CLI's maxconn
	fdsPerThread   = 3   // a poller and a wake-up pipe per thread
	defaultMaxConn = 100 // DEFAULT_MAXCONN: the least automatic maxconn
	peersConns     = 3   // the peers section's connections, the local peer alone
)

// Need is the open-file limit HAProxy sets for the config: what it
// needs.
func (f FDs) Need() int { return f.Own + f.Listeners + f.Checks + 2*f.MaxConn }

// MaxConnFor is the global maxconn HAProxy runs with under an open-file
// limit of limit: the configured one, or the one it computes from what
// the limit leaves (half of it, at least 100).
func (f FDs) MaxConnFor(limit int) int {
	if !f.Auto {
		return f.MaxConn
	}
	return max((limit-f.Own-f.Listeners-f.Checks)/2, defaultMaxConn)
}

// String says what the need is made of, for logs and errors.
func (f FDs) String() string {
	mc := fmt.Sprint(f.MaxConn)
	if f.Auto {
		mc = "automatic, at least " + mc
	}
	return fmt.Sprintf("%d (%d listeners, %d for health checks, 2 x maxconn %s, %d HAProxy's own)",
		f.Need(), f.Listeners, f.Checks, mc, f.Own)
}

// FileDescriptors is what HAProxy 2.6 reserves for the config rendered
// from cfg, layout and opts (Config), run as `haproxy -W -S SOCKET` with
// threads threads. It counts what build writes: keep the two together.
func FileDescriptors(cfg model.Config, layout model.Layout, opts Options, threads int) FDs {
	f := FDs{Own: fdsReserved + fdsPerThread*max(threads, 1), MaxConn: opts.MaxConn}
	if f.MaxConn <= 0 {
		f.MaxConn, f.Auto = defaultMaxConn, true
	}
	// The master CLI (-S): its listener, its connections and the socket
	// pair to the worker.
	f.Own += fdsCLIConns
	f.Listeners += 2
	if opts.StatsSocket != "" {
		f.Own += fdsCLIConns
		f.Listeners++
	}
	if withPeers(cfg, opts) {
		f.Own += peersConns
		f.Listeners++
	}
	if opts.Monitor.IsValid() {
		f.Listeners++
	}
	if opts.Stats.Port != 0 {
		f.Listeners++
	}
	for _, fe := range cfg.Frontends {
		f.Listeners += len(fe.Binds)
	}
	looseChecked := cfg.NodeCheck().Enabled && opts.Legacy&LooseChecked != 0
	for _, be := range cfg.Backends {
		slots := layout[be.Name]
		switch {
		case be.Check.Enabled: // default-server check: every slot
			f.Checks += len(slots)
			if be.Check.Port > 0 {
				f.Checks++ // its "port", parsed once
			}
		case be.Name == model.NodesBackend: // the agent that never answers
			f.Checks += len(slots) + 1 // and its "agent-port"
		case be.TrackNodes && looseChecked:
			for _, s := range slots {
				if s.Track == 0 {
					f.Checks += 2 // the check and its "port" on the server line
				}
			}
		}
	}
	return f
}
