package lab

import (
	"fmt"
	"syscall"
	"time"
)

// Sleep waits d on the calling OS thread (nanosleep), for a poller that
// needs a period under a millisecond: time.Sleep waits in the runtime's
// network poller, whose timeout is whole milliseconds (at least 1 ms
// when nothing else runs), so a poll "every 250 µs" with time.Sleep is
// one every ~1.1 ms.
func Sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var left syscall.Timespec
		if err := syscall.Nanosleep(&ts, &left); err != syscall.EINTR {
			return
		}
		ts = left // a signal (the Go runtime's preemption): the rest
	}
}

// Answered is when UntilAnswered saw the first answer, after how many
// probes, and the poll's mean period (one probe's start to the next's):
// what it adds to the time it measures is at most one period, half of it
// on average.
type Answered struct {
	At     time.Time
	Probes int
	Period time.Duration
}

// UntilAnswered probes addr (Probe, 200 ms each) every `every` (Sleep),
// from now until deadline after from, and returns the first answer.
func UntilAnswered(addr string, from time.Time, deadline, every time.Duration) (Answered, error) {
	var err error
	first := time.Now()
	for n := 1; time.Since(from) < deadline; n++ {
		start := time.Now()
		if _, err = Probe(addr, 200*time.Millisecond); err == nil {
			a := Answered{At: time.Now(), Probes: n}
			if n > 1 {
				a.Period = start.Sub(first) / time.Duration(n-1)
			}
			return a, nil
		}
		Sleep(every) // poll interval
	}
	return Answered{}, fmt.Errorf("%s not answered within %s: %w", addr, deadline, err)
}
