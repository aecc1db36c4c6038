package layer2

import "time"

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
func (a *Announcer) awake(now time.Time) {
	gap := now.Sub(a.ran)
	first := a.ran.IsZero()
	a.ran = now
	if first || gap <= a.cfg.Interval {
		return
	}
	a.node.Deaf(gap - a.cfg.Interval/4)
	if hold := time.Duration(a.cfg.Misses) * a.cfg.Interval; gap >= hold {
		a.log.Warn("the announcer did not run for longer than the hold time: its peers' silence meanwhile not counted",
			"stalled", gap.Round(time.Millisecond), "hold", hold)
	}
}
