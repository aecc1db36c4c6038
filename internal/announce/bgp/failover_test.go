package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/proc"
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
	rows := []string{netlab.Row("announcer", "fault", "family", "trials", "p50", "p95", "max"), netlab.Row("---", "---", "---", "---", "---", "---", "---")}
	// where a frozen host's time goes (p50 / p95 / max from the fault)
	steps := []string{netlab.Row("frozen", "trials", "fault in place", "router's BFD down", "router's kernel route", "backup answers"),
		netlab.Row("---", "---", "---", "---", "---", "---")}
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
			l.start(lb1, speakerFile{Config: Config{RestartTime: DefaultRestartTime, BFD: c.bfd}}, w)
			l.start(lb2, speakerFile{Config: Config{RestartTime: DefaultRestartTime, BFD: c.bfd, MED: 100}}, w)
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
				var ts []trial
				for range trials {
					tr, err := l.failover(vip4, lb1, lb2, faults[fault], c.bfd > 0)
					if err != nil {
						b.Fatal(err)
					}
					ds, ts = append(ds, tr.answered), append(ts, tr)
				}
				p50, p95, worst := netlab.Percentiles(ds)
				rows = append(rows, netlab.Row(c.name, fault, "IPv4", strconv.Itoa(trials), netlab.Ms(p50), netlab.Ms(p95), netlab.Ms(worst)))
				if fault == "frozen" {
					steps = append(steps, breakdown(c.name, ts)...)
				}
			}
		})
	}
	fmt.Println(strings.Join(rows, "\n"))
	fmt.Println()
	fmt.Println(strings.Join(steps, "\n"))
}

// failover runs one trial: once the router's traffic for a goes to
// primary (and, with bfd, its BFD sessions are up), the fault on
// primary, then a new connection every 10 ms until backup answers one;
// it returns the trial's clock (the time from the fault to that answer,
// and the steps between: breakdown_test.go) and undoes the fault.
func (l *lab) failover(a netip.Addr, primary, backup *netlab.Host, fault func(on bool) error, bfd bool) (trial, error) {
	if err := netlab.Eventually(context.Background(), 30*time.Second, func() error {
		if err := l.waitRoutes(a, 0, primary, backup); err != nil {
			return err
		}
		if bfd {
			if err := l.bfdUpNow(); err != nil {
				return err
			}
		}
		if name, err := l.ask(a, 200*time.Millisecond); err != nil || name != primary.Name {
			return fmt.Errorf("answered by %q (%v), want %s", name, err, primary.Name)
		}
		return nil
	}); err != nil {
		return trial{}, err
	}
	defer func() { _ = fault(false) }()
	mark := proc.Size(l.bird.LogPath)
	tr := trial{inPlace: -1}
	start := time.Now()
	took, err := netlab.FirstAnswer(15*time.Second, func() error {
		err := fault(true)
		tr.inPlace = time.Since(start)
		return err
	}, func() (string, error) { return l.ask(a, time.Second) }, func(name string) bool { return name == backup.Name })
	if err != nil {
		return trial{}, fmt.Errorf("%s answering for %s, the fault on %s: %w", backup.Name, a, primary.Name, err)
	}
	tr.answered = took
	tr.bfdDown, tr.routed = l.birdEvents(mark, start, primary, a)
	if took > time.Second {
		l.t.Logf("a slow trial (%s): BIRD logged:\n%s", took.Round(time.Millisecond), proc.TailFrom(l.bird.LogPath, mark, 40))
	}
	return tr, nil
}
