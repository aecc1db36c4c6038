package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// The node-death phase (-health-checks=node, -node-deaths=K): under a load
// at -load-rate, a node stand-in that serves most probed Services is taken
// out, then brought back, K times on different nodes, in two ways:
//   - "dead": its ports and its /healthz stop (listeners closed). On
//     loopback a closed port refuses connections at once, as a live host's
//     kernel does; a machine that lost power answers nothing, and each
//     connection and check sent to it would wait for its timeout instead.
//   - "503": its /healthz answers 503 while its ports still serve (the
//     node drains, KEP-3836).
//
// HAProxy's counters on the stats socket say what happened: the node's
// server in _nodes (its check), and the node's servers in the probed
// backends (they track it): status, stot (connections sent to the server,
// those refused by a dead node included), wredis (of those, redispatched
// to another server) and wretr (retried). Nothing changes in Kubernetes:
// the controller should send no Runtime API command and HAProxy should not
// reload.

const (
	deathPoll  = 5 * time.Millisecond // between two reads of the counters
	deathQuiet = time.Second          // after the node is down, this long with no new connection to it ends a watch
)

// deathRound is one node taken out under load and brought back; times
// are in ms from the kill (out) or from the return (back), as first seen
// by a poll (resolution: deathPoll plus the poll's own time).
type deathRound struct {
	Kind            string  `json:"kind"` // dead or 503
	Node            string  `json:"node"`
	Backends        int     `json:"backends"`        // probed backends with a server on the node
	DownMs          float64 `json:"down_ms"`         // the node's server in _nodes DOWN
	ServersDownMs   float64 `json:"servers_down_ms"` // every server of the node in the probed backends DOWN
	LastConnMs      float64 `json:"last_conn_ms"`    // the last new connection HAProxy sent to the node (0: none after the kill)
	SentAfter       int64   `json:"sent_after"`      // connections sent to the node after the kill
	Redispatched    int64   `json:"redispatched"`    // wredis after the kill
	Retries         int64   `json:"retries"`         // wretr after the kill
	UpMs            float64 `json:"up_ms"`           // back: the node's server in _nodes UP
	TrafficMs       float64 `json:"traffic_ms"`      // back: the first new connection sent to it
	Connections     int     `json:"connections"`     // of the round's load
	Failed          int     `json:"failed"`
	FirstErr        string  `json:"first_err,omitempty"`
	Reloads         int     `json:"reloads"`
	RuntimeCommands int     `json:"runtime_commands"` // the controller's haproxy_k8s_sync_runtime_commands_total
	Passes          int     `json:"passes"`           // the controller's passes (the periodic resync makes one every 30s)
	Drift           int     `json:"drift"`            // the controller's resync_drift_corrections_total
}

// deathSummary sums up the rounds of one kind.
type deathSummary struct {
	Kind            string `json:"kind"`
	Rounds          int    `json:"rounds"`
	DownMs          spread `json:"down_ms"`
	ServersDownMs   spread `json:"servers_down_ms"`
	LastConnMs      spread `json:"last_conn_ms"`
	UpMs            spread `json:"up_ms"`
	TrafficMs       spread `json:"traffic_ms"`
	Connections     int    `json:"connections"`
	Failed          int    `json:"failed"`
	SentAfter       int64  `json:"sent_after"`
	Redispatched    int64  `json:"redispatched"`
	Reloads         int    `json:"reloads"`
	RuntimeCommands int    `json:"runtime_commands"`
	Passes          int    `json:"passes"`
	Drift           int    `json:"drift"`
}

// deathResult is the phase's report (the JSON's node_death).
type deathResult struct {
	IntervalMs float64        `json:"check_interval_ms"`
	Rise       int            `json:"rise"`
	Fall       int            `json:"fall"`
	TargetMs   float64        `json:"target_ms"` // interval × fall: out by then
	PollMs     float64        `json:"poll_ms"`
	LoadRate   int            `json:"load_rate"`
	Rounds     []deathRound   `json:"rounds"`
	Summary    []deathSummary `json:"summary"`
}

// nodeDeaths runs the phase: -node-deaths rounds of each kind.
func (b *bench) nodeDeaths(ctx context.Context, obs *observer, ctl *proc, targets []string, dir string) (*deathResult, error) {
	c := b.cfg
	res := &deathResult{IntervalMs: ms(c.nodeInter), Rise: c.nodeRise, Fall: c.nodeFall,
		TargetMs: ms(c.nodeInter) * float64(c.nodeFall), PollMs: ms(deathPoll), LoadRate: c.loadRate}
	b.w.mu.Lock()
	excluded := make(map[int]bool, len(b.w.excluded))
	for n, ex := range b.w.excluded {
		excluded[n] = ex
	}
	b.w.mu.Unlock()
	nodes := deathNodes(c.nodes, c.endpoints, c.probe, c.deaths, excluded)
	if len(nodes) == 0 {
		return nil, errors.New("no node serves a probed Service")
	}
	logf("node death: %d rounds each of dead and 503 on %v, check %s x fall %d (rise %d), load %d/s",
		c.deaths, nodes, c.nodeInter, c.nodeFall, c.nodeRise, c.loadRate)
	for _, kind := range []string{"dead", "503"} {
		for r := range c.deaths {
			rd, err := b.deathRound(ctx, obs, ctl, kind, nodes[r%len(nodes)], targets, filepath.Join(dir, fmt.Sprintf("death-%s-%d", kind, r)))
			if err != nil {
				return nil, fmt.Errorf("node death (%s, round %d): %w", kind, r, err)
			}
			logf("  %s %s: _nodes DOWN %.0f ms, its %d servers DOWN %.0f ms, last connection sent %.0f ms; %d sent after the kill, %d redispatched, %d retried; back: UP %.0f ms, traffic %.0f ms; load %d connections, %d failed %s; %d reloads, %d Runtime API commands, %d passes, %d drift corrections",
				kind, rd.Node, rd.DownMs, rd.Backends, rd.ServersDownMs, rd.LastConnMs, rd.SentAfter, rd.Redispatched, rd.Retries,
				rd.UpMs, rd.TrafficMs, rd.Connections, rd.Failed, rd.FirstErr, rd.Reloads, rd.RuntimeCommands, rd.Passes, rd.Drift)
			res.Rounds = append(res.Rounds, rd)
		}
	}
	res.Summary = summarize(res.Rounds)
	return res, nil
}

// deathRound takes node n out (kind dead or 503) under a fresh load at
// -load-rate, watches HAProxy take it out, brings it back and watches it
// return.
func (b *bench) deathRound(ctx context.Context, obs *observer, ctl *proc, kind string, n int, targets []string, dir string) (deathRound, error) {
	c, ip := b.cfg, b.w.nodeIP(n)
	rd := deathRound{Kind: kind, Node: nodeName(n)}
	var backends []string
	for i := range c.probe {
		if (n-i%c.nodes+c.nodes)%c.nodes < c.endpoints {
			backends = append(backends, obs.haproxyName(b.w.backend(i)))
		}
	}
	rd.Backends = len(backends)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rd, err
	}
	r0, err := obs.reloads(ctx)
	if err != nil {
		return rd, err
	}
	a0, err := controllerActivity(ctx, ctl.log)
	if err != nil {
		return rd, err
	}
	load, err := startLoad(dir, targets, c.loadRate, 10*time.Minute, c.loadRate*600)
	if err != nil {
		return rd, err
	}
	defer load.stop(syscall.SIGKILL, time.Second)

	// In service, and the load reaches it.
	ss, err := obs.watchNode(ctx, ip, backends, 30*time.Second, func(ss []sample) bool {
		v := ss[len(ss)-1].v
		return v.Status == "UP" && v.Servers == len(backends) && v.Down == 0 && v.Stot > ss[0].v.Stot
	})
	if err != nil {
		return rd, fmt.Errorf("%s not in service with traffic before the round: %w", rd.Node, err)
	}
	// Out, at a random point of the check's period (as a real failure).
	if err := pause(ctx, rand.N(c.nodeInter)); err != nil {
		return rd, err
	}
	ss, err = obs.watchNode(ctx, ip, backends, 10*time.Second, func([]sample) bool { return true })
	if err != nil {
		return rd, err
	}
	base := ss[len(ss)-1].v

	if err := b.takeOut(kind, n); err != nil {
		return rd, err
	}
	t0 := time.Now()
	back := false
	defer func() {
		if !back {
			_ = b.bringBack(kind, n)
		}
	}()
	ss, err = obs.watchNode(ctx, ip, backends, time.Duration(c.nodeFall+2)*c.nodeInter+deathQuiet+10*time.Second, func(ss []sample) bool {
		o := outTimes(t0, base, ss)
		return o.downAt > 0 && o.serversDownAt > 0 && time.Since(t0) > max(o.serversDownAt, o.lastConnAt)+deathQuiet
	})
	if err != nil {
		return rd, fmt.Errorf("%s not taken out: %w", rd.Node, err)
	}
	o := outTimes(t0, base, ss)
	rd.DownMs, rd.ServersDownMs, rd.LastConnMs = ms(o.downAt), ms(o.serversDownAt), ms(o.lastConnAt)
	last := ss[len(ss)-1].v
	rd.SentAfter, rd.Redispatched, rd.Retries = last.Stot-base.Stot, last.Wredis-base.Wredis, last.Wretr-base.Wretr

	// Back, at a random point of the check's period.
	if err := pause(ctx, rand.N(c.nodeInter)); err != nil {
		return rd, err
	}
	back = true
	if err := b.bringBack(kind, n); err != nil {
		return rd, err
	}
	t1 := time.Now()
	ss, err = obs.watchNode(ctx, ip, backends, time.Duration(c.nodeRise+2)*c.nodeInter+10*time.Second, func(ss []sample) bool {
		up, traffic := backTimes(t1, last, ss)
		return up > 0 && traffic > 0
	})
	if err != nil {
		return rd, fmt.Errorf("%s not back: %w", rd.Node, err)
	}
	up, traffic := backTimes(t1, last, ss)
	rd.UpMs, rd.TrafficMs = ms(up), ms(traffic)

	lr, err := load.finish()
	if err != nil {
		return rd, err
	}
	rd.Connections, rd.Failed, rd.FirstErr = lr.Total, lr.Failed, lr.FirstErr
	r1, err := obs.reloads(ctx)
	if err != nil {
		return rd, err
	}
	a1, err := controllerActivity(ctx, ctl.log)
	if err != nil {
		return rd, err
	}
	rd.Reloads = r1 - r0
	rd.RuntimeCommands = int(a1[metricCommands] - a0[metricCommands])
	rd.Passes = int(a1[metricPasses] - a0[metricPasses])
	rd.Drift = int(a1[metricDrift] - a0[metricDrift])
	return rd, nil
}

// takeOut kills node n's stand-in (dead: its listeners and its /healthz
// closed) or makes its /healthz answer 503 (its ports still serve).
func (b *bench) takeOut(kind string, n int) error {
	if kind == "503" {
		b.health[n].SetHealthy(false)
		return nil
	}
	b.nodes[n].Close()
	b.health[n].Close()
	return nil
}

// bringBack undoes takeOut: the same ports and a new /healthz answering 200.
func (b *bench) bringBack(kind string, n int) error {
	if kind == "503" {
		b.health[n].SetHealthy(true)
		return nil
	}
	for i := range b.cfg.probe {
		if err := b.nodes[n].Listen(b.cfg.npBase + i); err != nil {
			return err
		}
	}
	h, err := lab.NewHealthServer(b.w.nodeIP(n) + ":" + strconv.Itoa(nodeCheckPort))
	if err != nil {
		return err
	}
	b.health[n] = h
	return nil
}

// sample is one poll of a node's counters.
type sample struct {
	at time.Time
	v  nodeView
}

// watchNode reads the node's server in _nodes and its servers in backends
// every deathPoll until done holds for the samples so far, or timeout.
func (o *observer) watchNode(ctx context.Context, ip string, backends []string, timeout time.Duration, done func([]sample) bool) ([]sample, error) {
	cmds := []string{"show stat " + model.NodesBackend + " 4 -1"}
	for _, be := range backends {
		cmds = append(cmds, "show stat "+be+" 4 -1")
	}
	o.rt.Reset() // a reload before the watch leaves the connection with the old worker
	deadline := time.Now().Add(timeout)
	var ss []sample
	for {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ans, err := o.rt.ExecChecked(qctx, cmds)
		cancel()
		at := time.Now()
		if err == nil {
			v, perr := viewAnswers(ip, ans)
			if perr != nil {
				return ss, perr
			}
			ss = append(ss, sample{at: at, v: v})
			if done(ss) {
				return ss, nil
			}
		} else {
			o.rt.Reset()
		}
		if ctx.Err() != nil {
			return ss, ctx.Err()
		}
		if at.After(deadline) {
			if err != nil {
				return ss, err
			}
			return ss, fmt.Errorf("after %s: last seen %+v", timeout, ss[len(ss)-1].v)
		}
		time.Sleep(deathPoll)
	}
}

// statColumns are the `show stat` columns the node-death phase reads.
var statColumns = []string{"addr", "stot", "wretr", "wredis"}

// viewAnswers parses the answers of watchNode's commands: _nodes first,
// then the backends.
func viewAnswers(ip string, ans []string) (nodeView, error) {
	nodes, err := haproxy.ParseStat(ans[0], statColumns...)
	if err != nil {
		return nodeView{}, err
	}
	var servers []haproxy.StatRow
	for _, a := range ans[1:] {
		rows, err := haproxy.ParseStat(a, statColumns...)
		if err != nil {
			return nodeView{}, err
		}
		servers = append(servers, rows...)
	}
	return viewNode(ip, nodes, servers), nil
}

const (
	metricCommands = "haproxy_k8s_sync_runtime_commands_total"
	metricPasses   = "haproxy_k8s_sync_pass_duration_seconds"
	metricDrift    = "haproxy_k8s_sync_resync_drift_corrections_total"
)

// controllerActivity reads the controller's Runtime API command, pass and
// drift counters from its /metrics (its address from its log).
func controllerActivity(ctx context.Context, logPath string) (map[string]float64, error) {
	lg, err := os.ReadFile(logPath)
	if err != nil {
		return nil, err
	}
	addr := metricsAddress(lg)
	if addr == "" {
		return nil, fmt.Errorf("no metrics address in %s", logPath)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: %s", resp.Status)
	}
	return counterSums(body, metricCommands, metricPasses, metricDrift)
}
