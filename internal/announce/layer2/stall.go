package layer2

import (
	"runtime/metrics"
	"syscall"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
)

// awake notes that the heartbeat loop runs at now. The loop wakes at
// least every quarter interval (its check for silence); a gap longer
// than an interval means it did not run (its process was not
// scheduled: a loaded machine, a paused one), and it heard nothing
// meanwhile. The peers' heartbeats of that span wait in the socket or
// were never sent (a paused machine, or a test stopping its hosts'
// processes): either way their silence is this host's, and the node
// does not count it (announce.Node.Deaf). Without that, the first
// decision after a stall longer than the hold time, taken before the
// reader hands over what arrived, found every peer silent and took
// their addresses (a process stopped for 500 ms: 403-1,004 moves of the
// 500 addresses of TestFailoverManyAddresses,
// TestStalledProcessMovesNothing).
//
// The stall is also told to the peers (announce.Node.Stalled,
// Heartbeat.Stall), who allow this host's silence its measure before
// they count it gone, and logged with what the process did meanwhile
// (stallEvidence): a stall with no CPU used was the process not
// scheduled, one with CPU and garbage collections its own work.
func (a *Announcer) awake(now time.Time) {
	gap := now.Sub(a.ran)
	first := a.ran.IsZero()
	a.ran = now
	ev := a.evidence
	a.evidence = stallEvidence()
	if first || gap <= a.cfg.Interval {
		return
	}
	a.node.Deaf(gap - a.cfg.Interval/4)
	longest := gap > a.node.Stall(now)
	a.node.Stalled(gap, now)
	hold := time.Duration(a.cfg.Misses) * a.cfg.Interval
	args := []any{"stalled", gap.Round(time.Millisecond), "hold", hold,
		"cpu", (a.evidence.cpu - ev.cpu).Round(time.Millisecond), "gcs", a.evidence.gcs - ev.gcs,
		"allowed", announce.AllowedSilence(hold, a.node.Stall(now)).Round(time.Millisecond)}
	switch {
	case gap >= hold:
		a.log.Warn("the announcer did not run for longer than the hold time: its peers' silence meanwhile not counted", args...)
	case longest:
		a.log.Info("the announcer stalled longer than it did lately: its peers allow its silence longer", args...)
	default:
		a.log.Debug("the announcer stalled", args...)
	}
}

// evidence is what the process had done at a moment: its CPU time (all
// threads, user and system) and its garbage collections.
type evidence struct {
	cpu time.Duration
	gcs uint64
}

var gcCycles = "/gc/cycles/total:gc-cycles"

// stallEvidence reads the process's CPU time and GC count now (one
// system call and a runtime counter: cheap enough for every wake).
func stallEvidence() evidence {
	var e evidence
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		e.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	s := []metrics.Sample{{Name: gcCycles}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		e.gcs = s[0].Value.Uint64()
	}
	return e
}
