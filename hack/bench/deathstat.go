package main

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
)

// nodeView is what one poll saw of one node: its server in _nodes and
// the servers at its address in the probed backends.
type nodeView struct {
	Status  string // of its server in _nodes ("" if none)
	Servers int    // its servers in the probed backends
	Down    int    // of them, down
	Stot    int64  // summed over them
	Wretr   int64
	Wredis  int64
}

// nodeUp: the node's check passes (UP, or UP n/m: failing but not yet down).
func (v nodeView) nodeUp() bool { return strings.HasPrefix(v.Status, "UP") }

// nodeDown: the node's check has taken it out (DOWN, or DOWN n/m: passing
// again but not yet up).
func (v nodeView) nodeDown() bool { return strings.HasPrefix(v.Status, "DOWN") }

// viewNode sums the rows of the node at ip: nodes are the rows of the
// _nodes backend, servers those of the probed backends.
func viewNode(ip string, nodes, servers []haproxy.StatRow) nodeView {
	var v nodeView
	for _, r := range nodes {
		if r.Addr == ip {
			v.Status = r.Status
		}
	}
	for _, r := range servers {
		if r.Addr != ip {
			continue
		}
		v.Servers++
		if r.Down() {
			v.Down++
		}
		v.Stot += r.Stot
		v.Wretr += r.Wretr
		v.Wredis += r.Wredis
	}
	return v
}

// deathNodes picks k nodes (of n, not excluded) that serve the most probed
// Services (Service i has its endpoint j on node (i+j)%n, for i < probe and
// j < e), the lowest index first among equals.
func deathNodes(n, e, probe, k int, excluded map[int]bool) []int {
	serves := func(node int) int {
		c := 0
		for i := range probe {
			if (node-i%n+n)%n < e {
				c++
			}
		}
		return c
	}
	var cand []int
	for node := range n {
		if !excluded[node] && serves(node) > 0 {
			cand = append(cand, node)
		}
	}
	slices.SortStableFunc(cand, func(a, b int) int { return serves(b) - serves(a) })
	return cand[:min(k, len(cand))]
}

// spread is the minimum, median and maximum of some rounds' values.
type spread struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

func spreadOf(v []float64) spread {
	if len(v) == 0 {
		return spread{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{Min: s[0], Median: m, Max: s[len(s)-1]}
}

func (s spread) String() string {
	return fmt.Sprintf("%.0f / %.0f / %.0f", s.Min, s.Median, s.Max)
}

// metricsAddrRE finds the address the controller serves /metrics on, in
// its log.
var metricsAddrRE = regexp.MustCompile(`msg="serving metrics and health" address=(\S+)`)

// metricsAddress is that address, or "" when the log has not said yet.
func metricsAddress(log []byte) string {
	if m := metricsAddrRE.FindSubmatch(log); m != nil {
		return string(m[1])
	}
	return ""
}

// counterSums sums, per metric family named, every series of a counter
// (or the count of a histogram) in Prometheus' text format; a family
// absent counts 0.
func counterSums(text []byte, names ...string) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(names))
	for _, name := range names {
		out[name] = 0
		for _, m := range mfs[name].GetMetric() {
			switch {
			case m.Counter != nil:
				out[name] += m.Counter.GetValue()
			case m.Histogram != nil:
				out[name] += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return out, nil
}

// outSeen is when the samples after a kill at t0 first showed the node
// down, every server of it down, and the last new connection to it (0:
// not seen, or no connection after the kill).
type outSeen struct{ downAt, serversDownAt, lastConnAt time.Duration }

// outTimes reads ss, taken after a kill at t0 when the node's counters
// were base.
func outTimes(t0 time.Time, base nodeView, ss []sample) outSeen {
	var o outSeen
	prev := base.Stot
	for _, s := range ss {
		d := s.at.Sub(t0)
		if o.downAt == 0 && s.v.nodeDown() {
			o.downAt = d
		}
		if o.serversDownAt == 0 && s.v.Servers > 0 && s.v.Down == s.v.Servers {
			o.serversDownAt = d
		}
		if s.v.Stot != prev {
			o.lastConnAt, prev = d, s.v.Stot
		}
	}
	return o
}

// backTimes reads ss, taken after the node came back at t1 with its
// counters at base: when it was first seen up, and first sent a new
// connection (0: not yet).
func backTimes(t1 time.Time, base nodeView, ss []sample) (up, traffic time.Duration) {
	for _, s := range ss {
		d := s.at.Sub(t1)
		if up == 0 && s.v.Status == "UP" {
			up = d
		}
		if traffic == 0 && s.v.Stot > base.Stot {
			traffic = d
		}
	}
	return up, traffic
}

// summarize groups rounds by kind, in their order.
func summarize(rounds []deathRound) []deathSummary {
	var out []deathSummary
	for _, kind := range []string{"dead", "503"} {
		s := deathSummary{Kind: kind}
		var down, sdown, last, up, traffic []float64
		for _, r := range rounds {
			if r.Kind != kind {
				continue
			}
			s.Rounds++
			down, sdown, last = append(down, r.DownMs), append(sdown, r.ServersDownMs), append(last, r.LastConnMs)
			up, traffic = append(up, r.UpMs), append(traffic, r.TrafficMs)
			s.Connections += r.Connections
			s.Failed += r.Failed
			s.SentAfter += r.SentAfter
			s.Redispatched += r.Redispatched
			s.Reloads += r.Reloads
			s.RuntimeCommands += r.RuntimeCommands
			s.Passes += r.Passes
			s.Drift += r.Drift
		}
		if s.Rounds == 0 {
			continue
		}
		s.DownMs, s.ServersDownMs, s.LastConnMs = spreadOf(down), spreadOf(sdown), spreadOf(last)
		s.UpMs, s.TrafficMs = spreadOf(up), spreadOf(traffic)
		out = append(out, s)
	}
	return out
}

// printDeath prints the phase's rounds and summary.
func printDeath(out io.Writer, d *deathResult) {
	fmt.Fprintf(out, "Node death under load (%d/s): check every %.0f ms, fall %d, rise %d; target: out within interval x fall = %.0f ms, 0 failed; poll every %.0f ms\n",
		d.LoadRate, d.IntervalMs, d.Fall, d.Rise, d.TargetMs, d.PollMs)
	fmt.Fprintf(out, "%-5s %-9s %4s %8s %11s %10s %6s %7s %8s %9s %7s %7s %8s %8s %7s %6s\n",
		"kind", "node", "bes", "down ms", "servers ms", "last conn", "sent", "redisp", "up ms", "traffic", "conns", "failed", "reloads", "rt cmds", "passes", "drift")
	for _, r := range d.Rounds {
		fmt.Fprintf(out, "%-5s %-9s %4d %8.0f %11.0f %10.0f %6d %7d %8.0f %9.0f %7d %7d %8d %8d %7d %6d\n",
			r.Kind, r.Node, r.Backends, r.DownMs, r.ServersDownMs, r.LastConnMs, r.SentAfter, r.Redispatched,
			r.UpMs, r.TrafficMs, r.Connections, r.Failed, r.Reloads, r.RuntimeCommands, r.Passes, r.Drift)
	}
	for _, s := range d.Summary {
		fmt.Fprintf(out, "%s x%d (min / median / max ms): _nodes DOWN %s; servers DOWN %s; last connection %s; back UP %s, traffic %s; failed %d of %d, redispatched %d, reloads %d, Runtime API commands %d, passes %d, drift corrections %d\n",
			s.Kind, s.Rounds, s.DownMs, s.ServersDownMs, s.LastConnMs, s.UpMs, s.TrafficMs, s.Failed, s.Connections,
			s.Redispatched, s.Reloads, s.RuntimeCommands, s.Passes, s.Drift)
	}
	fmt.Fprintln(out)
}
