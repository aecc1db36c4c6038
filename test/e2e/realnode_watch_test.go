package e2e

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/nodes"
)

// healthWatch keeps the evidence of a real-node health scenario: while it
// runs, what decides whether HAProxy sends a node traffic, each line when
// it changes, with its time:
//   - each server's state and last check in HAProxy (show stat), and its
//     connections that failed, were retried or redispatched to another
//     server (option redispatch: the client then sees the other's answer);
//   - each node's kube-proxy /healthz and the Service's healthCheckNodePort,
//     asked from the load balancer's namespace as HAProxy's checks ask;
//   - the ready endpoints per node in the Service's EndpointSlices;
//   - the test's own steps (mark).
//
// When the test has failed, finish logs that timeline, HAProxy's servers
// now (show stat, show servers state) and what it logged about them, and
// what every node's kube-proxy logged since the watch began.
type healthWatch struct {
	r      *realNodeEnv
	svc    string
	hcPort int32
	logs   nodes.LogMark
	hapOff int // HAProxy's output before the watch

	mu     sync.Mutex
	events []string
	last   map[string]string
	stop   chan struct{}
	done   chan struct{}
}

const (
	watchEvery = 200 * time.Millisecond
	// watchMax bounds the samples (a test's scenario is a few minutes).
	watchMax = 15 * time.Minute / watchEvery
)

// watchHealth starts watching Service svc (of namespace ns) with health
// check node port hcPort.
func (r *realNodeEnv) watchHealth(svc string, hcPort int32) *healthWatch {
	w := &healthWatch{r: r, svc: svc, hcPort: hcPort, logs: r.tier.MarkLogs(), hapOff: len(r.hap.Output()),
		last: map[string]string{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(watchEvery)
		defer tick.Stop()
		for range watchMax {
			w.sample()
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *healthWatch) add(line string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, time.Now().Format("15:04:05.000")+" "+line)
}

// mark notes a step of the test in the timeline.
func (w *healthWatch) mark(format string, args ...any) {
	w.add("test: " + fmt.Sprintf(format, args...))
}

// set records key's value when it changed.
func (w *healthWatch) set(key, value string) {
	w.mu.Lock()
	changed := w.last[key] != value
	w.last[key] = value
	w.mu.Unlock()
	if changed {
		w.add(key + ": " + value)
	}
}

func (w *healthWatch) sample() {
	rows, err := w.r.statRows()
	if err != nil {
		w.set("haproxy", err.Error())
	}
	for _, row := range rows {
		w.set("haproxy "+row["pxname"]+"/"+row["svname"], row.checkSummary())
		// Connections that failed to connect to the server, retried on it,
		// or redispatched to another (option redispatch: the client sees
		// another server's answer, not an error).
		w.set("haproxy "+row["pxname"]+"/"+row["svname"]+" errors", fmt.Sprintf("econ=%s wretr=%s wredis=%s eresp=%s", row["econ"], row["wretr"], row["wredis"], row["eresp"]))
	}
	for _, n := range w.r.tier.Nodes {
		w.set(n.Name+" kube-proxy /healthz", healthAnswer(w.r.tier.HTTPGetBody(fmt.Sprintf("http://%s:%d/healthz", n.Addr, nodes.KubeProxyHealthPort))))
		if w.hcPort != 0 {
			w.set(n.Name+" healthCheckNodePort", healthAnswer(w.r.tier.HTTPGetBody(fmt.Sprintf("http://%s:%d/", n.Addr, w.hcPort))))
		}
	}
	w.set("endpointslices", w.r.readyPerNode(w.svc))
}

// healthAnswer is the part of a kube-proxy health answer that matters:
// the status and the body's reasons, without its clock.
func healthAnswer(code int, body string, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	var b map[string]any
	if json.Unmarshal([]byte(body), &b) != nil {
		return fmt.Sprintf("%d %q", code, body)
	}
	delete(b, "currentTime")
	if code == 200 {
		// kube-proxy's /healthz: when it last synced changes all the
		// time; it matters when it is unhealthy.
		delete(b, "lastUpdated")
		delete(b, "status")
	}
	out := fmt.Sprint(code)
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "service" {
			continue
		}
		out += fmt.Sprintf(" %s=%v", k, b[k])
	}
	return out
}

// readyPerNode is "node: ready/all" of the endpoints in svc's
// EndpointSlices.
func (r *realNodeEnv) readyPerNode(svc string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	slices, err := r.client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		return "error: " + err.Error()
	}
	ready, all := map[string]int{}, map[string]int{}
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			node := "?"
			if ep.NodeName != nil {
				node = *ep.NodeName
			}
			all[node]++
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
				ready[node]++
			}
		}
	}
	var parts []string
	for node, n := range all {
		parts = append(parts, fmt.Sprintf("%s %d/%d ready", node, ready[node], n))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d slices: %s", len(slices.Items), strings.Join(parts, ", "))
}

// finish stops the watch and, when the test failed (or the variable
// HKS_REALNODE_EVIDENCE is set), logs the evidence.
func (w *healthWatch) finish() {
	close(w.stop)
	<-w.done
	t := w.r.t
	if !t.Failed() && os.Getenv("HKS_REALNODE_EVIDENCE") == "" {
		return
	}
	w.mu.Lock()
	timeline := strings.Join(w.events, "\n")
	w.mu.Unlock()
	t.Logf("--- timeline (every %v, changes only) ---\n%s", watchEvery, timeline)
	t.Logf("--- HAProxy's servers now ---\n%s", w.r.statReport())
	if out, err := w.r.runtimeExec("show servers state"); err == nil && len(out) > 0 {
		t.Logf("--- show servers state ---\n%s", out[0])
	} else {
		t.Logf("show servers state: %v", err)
	}
	var hap []string
	out := w.r.hap.Output()
	for _, line := range strings.Split(out[min(w.hapOff, len(out)):], "\n") {
		if strings.Contains(line, "Server ") || strings.Contains(line, "backend ") {
			hap = append(hap, line)
		}
	}
	t.Logf("--- HAProxy's messages about servers since the watch began ---\n%s", strings.Join(hap, "\n"))
	t.Logf("%s", w.r.tier.LogsSince(w.logs, 300, "kube-proxy"))
}

// statRow is one server line of show stat, by column name.
type statRow map[string]string

// checkSummary is what a server's row says about its state and its
// last check: status, check status and code, the check's description.
func (r statRow) checkSummary() string {
	s := fmt.Sprintf("%s addr=%s", r["status"], r["addr"])
	if r["check_status"] != "" {
		s += fmt.Sprintf(" check=%s/%s %q", r["check_status"], r["check_code"], r["last_chk"])
	}
	return s
}

// statRows reads HAProxy's show stat, the servers that point somewhere
// (free slots left out).
func (r *realNodeEnv) statRows() ([]statRow, error) {
	out, err := r.runtimeExec("show stat")
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("show stat: no answer")
	}
	return parseStatRows(out[0])
}

// parseStatRows reads show stat's CSV by the names of its header.
func parseStatRows(out string) ([]statRow, error) {
	head, body, _ := strings.Cut(out, "\n")
	cols := strings.Split(strings.TrimPrefix(head, "# "), ",")
	rd := csv.NewReader(strings.NewReader(body))
	rd.FieldsPerRecord = -1
	recs, err := rd.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("show stat: %w", err)
	}
	var rows []statRow
	for _, rec := range recs {
		row := statRow{}
		for i, v := range rec {
			if i < len(cols) {
				row[cols[i]] = v
			}
		}
		if sv := row["svname"]; sv == "FRONTEND" || sv == "BACKEND" || row["addr"] == render.FreeSlotAddr {
			continue
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// runtimeExec runs cmd on a new connection to HAProxy's stats socket: the
// env's persistent one (r.runtime) may still talk to the worker of before
// the controller's first reload, which runs init's config and has no
// servers.
func (r *realNodeEnv) runtimeExec(cmd string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	rt := haproxy.NewRuntime(r.hap.StatsSocket)
	defer rt.Close()
	return rt.Exec(ctx, []string{cmd})
}
