package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// BenchmarkFailover is the BGP part of `make failover`: active/passive
// (lb2 announces with a higher MED) against BIRD 2, HKS_FAILOVER_TRIALS
// (default 20) trials of each fault on lb1, from the fault to the first
// new TCP connection from the router answered by lb2 (one tried every
// 10 ms), printed as a table (BENCHMARKS.md). HKS_FAILOVER_ONLY=keepalived
// skips it.
func BenchmarkFailover(b *testing.B) {
	if os.Getenv("HKS_FAILOVER_ONLY") == "keepalived" {
		b.Skip("HKS_FAILOVER_ONLY=keepalived")
	}
	trials := 20
	if v, err := strconv.Atoi(os.Getenv("HKS_FAILOVER_TRIALS")); err == nil && v > 0 {
		trials = v
	}
	rows := []string{row("announcer", "fault", "family", "trials", "p50", "p95", "max"), row("---", "---", "---", "---", "---", "---", "---")}
	for _, c := range []struct {
		name string
		bfd  time.Duration
	}{
		{"haproxy-k8s-sync bgp, hold 3 s, no BFD", 0},
		{"haproxy-k8s-sync bgp, BFD 100 ms x 3", 100 * time.Millisecond},
	} {
		b.Run(strings.ReplaceAll(c.name, " ", "_"), func(b *testing.B) {
			l := newLab(b, 2, birdOpts{bfd: c.bfd})
			lb1, lb2 := l.lbs[0], l.lbs[1]
			w := announce.Want{Addrs: []netip.Addr{vip4}, Healthy: true}
			l.start(lb1, speakerFile{RestartTime: DefaultRestartTime, BFD: c.bfd}, w)
			l.start(lb2, speakerFile{RestartTime: DefaultRestartTime, BFD: c.bfd, MED: 100}, w)
			faults := map[string]func(on bool) error{
				// its health gate fails: it withdraws
				"unhealthy": func(on bool) error {
					w := w
					w.Healthy = !on
					l.set(lb1, w)
					return nil
				},
				// its link up, every frame to and from it dropped at the switch
				"frozen": func(on bool) error { return l.seg.Freeze(lb1, on) },
			}
			for _, fault := range []string{"unhealthy", "frozen"} {
				var ds []time.Duration
				for range trials {
					d, err := l.failover(vip4, lb1, lb2, faults[fault], c.bfd > 0)
					if err != nil {
						b.Fatal(err)
					}
					ds = append(ds, d)
				}
				p50, p95, worst := stats(ds)
				rows = append(rows, row(c.name, fault, "IPv4", strconv.Itoa(trials), ms(p50), ms(p95), ms(worst)))
			}
		})
	}
	fmt.Println(strings.Join(rows, "\n"))
}

// failover runs one trial: once the router's traffic for a goes to
// primary (and, with bfd, its BFD sessions are up), the fault on
// primary, then a new connection every 10 ms until backup answers one;
// it returns the time from the fault to that answer and undoes the fault.
func (l *lab) failover(a netip.Addr, primary, backup *netlab.Host, fault func(on bool) error, bfd bool) (time.Duration, error) {
	if err := netlab.Eventually(context.Background(), 30*time.Second, func() error {
		if err := l.waitRoutes(a, 0, primary, backup); err != nil {
			return err
		}
		if bfd {
			out, err := l.birdc("show", "bfd", "sessions")
			if err != nil || strings.Count(out, " Up ") != 2 {
				return fmt.Errorf("BFD sessions not up: %v\n%s", err, out)
			}
		}
		if name, err := l.ask(a, 200*time.Millisecond); err != nil || name != primary.Name {
			return fmt.Errorf("answered by %q (%v), want %s", name, err, primary.Name)
		}
		return nil
	}); err != nil {
		return 0, err
	}
	type answer struct {
		at   time.Time
		name string
	}
	answers := make(chan answer, 2000)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var tries sync.WaitGroup
	start := time.Now()
	if err := fault(true); err != nil {
		return 0, err
	}
	defer func() { _ = fault(false) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var took time.Duration
	var err error
loop:
	for {
		tries.Add(1)
		go func() {
			defer tries.Done()
			if name, err := l.ask(a, time.Second); err == nil {
				answers <- answer{time.Now(), name}
			}
		}()
		select {
		case <-ctx.Done():
			err = fmt.Errorf("%s did not answer for %s within 15 s of the fault on %s", backup.Name, a, primary.Name)
			break loop
		case an := <-answers:
			if an.name == backup.Name {
				took = an.at.Sub(start)
				break loop
			}
		case <-tick.C:
		}
	}
	tries.Wait()
	return took, err
}

// stats is p50, p95 and max of ds.
func stats(ds []time.Duration) (p50, p95, worst time.Duration) {
	s := append([]time.Duration{}, ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s)-1)+0.5))] }
	return at(0.50), at(0.95), s[len(s)-1]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func row(cells ...string) string { return "| " + strings.Join(cells, " | ") + " |" }
