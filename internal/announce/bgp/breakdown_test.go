package bgp

import (
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/proc"
)

// trial is one failover's clock, each a time from the fault's start
// (-1 when not seen): the fault in place (the nft command returned),
// the router's BFD session with the failed host down and its kernel
// route changed (BIRD's log), and the first new connection the backup
// answered.
type trial struct {
	inPlace, bfdDown, routed, answered time.Duration
}

// birdStamp is the layout of the time stamp that starts each line of
// BIRD's log (`log stderr all`: local time, milliseconds).
const birdStamp = "2006-01-02 15:04:05.000"

// birdEvents reads BIRD's log from offset (proc.Size before the fault)
// for the first BFD session to h going down and the first change of
// a's route in the kernel (the lab's BIRD logs both: debug states,
// events and routes), as times from start; -1 for what it did not log.
func (l *lab) birdEvents(offset int64, start time.Time, h *netlab.Host, a netip.Addr) (bfdDown, routed time.Duration) {
	bfdDown, routed = -1, -1
	bfdLine := "Session to " + l.hostAddr(h).String() + " changed state from Up to Down"
	route := " " + netip.PrefixFrom(a, a.BitLen()).String() + " "
	for _, line := range strings.Split(proc.TailFrom(l.bird.LogPath, offset, 2000), "\n") {
		if len(line) < len(birdStamp) {
			continue
		}
		at, err := time.ParseInLocation(birdStamp, line[:len(birdStamp)], time.Local)
		if err != nil {
			continue
		}
		switch {
		case bfdDown < 0 && strings.Contains(line, bfdLine):
			bfdDown = at.Sub(start)
		case routed < 0 && strings.Contains(line, "kernel") && strings.Contains(line, route):
			routed = at.Sub(start)
		}
	}
	return bfdDown, routed
}

// breakdown is the table of where a fault's time went: p50 / p95 / max
// of each step over the trials.
func breakdown(name string, ts []trial) []string {
	col := func(get func(trial) time.Duration) string {
		var ds []time.Duration
		for _, t := range ts {
			if d := get(t); d >= 0 {
				ds = append(ds, d)
			}
		}
		if len(ds) == 0 {
			return "not seen"
		}
		p50, p95, worst := netlab.Percentiles(ds)
		s := netlab.Ms(p50) + " / " + netlab.Ms(p95) + " / " + netlab.Ms(worst)
		if len(ds) < len(ts) {
			s += " (" + strconv.Itoa(len(ds)) + " of " + strconv.Itoa(len(ts)) + ")"
		}
		return s
	}
	return []string{netlab.Row(name, strconv.Itoa(len(ts)),
		col(func(t trial) time.Duration { return t.inPlace }),
		col(func(t trial) time.Duration { return t.bfdDown }),
		col(func(t trial) time.Duration { return t.routed }),
		col(func(t trial) time.Duration { return t.answered }))}
}
