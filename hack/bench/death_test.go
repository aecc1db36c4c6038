package main

import (
	"reflect"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
)

func TestViewNode(t *testing.T) {
	nodes := []haproxy.StatRow{{Addr: "127.1.0.1", Status: "UP"}, {Addr: "127.1.0.2", Status: "UP 1/2"}}
	servers := []haproxy.StatRow{
		{Addr: "127.1.0.2", Status: "DOWN", Stot: 10, Wredis: 3, Wretr: 1},
		{Addr: "127.1.0.2", Status: "UP", Stot: 5},
		{Addr: "127.1.0.1", Status: "UP", Stot: 100},
		{Addr: "127.1.0.2", Status: "MAINT (via _nodes/s1)", Stot: 1},
	}
	got := viewNode("127.1.0.2", nodes, servers)
	want := nodeView{Status: "UP 1/2", Servers: 3, Down: 2, Stot: 16, Wretr: 1, Wredis: 3}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if !got.nodeUp() || got.nodeDown() {
		t.Errorf("UP 1/2 (failing, not yet down) is up")
	}
	if v := (nodeView{Status: "DOWN 1/2"}); v.nodeUp() || !v.nodeDown() {
		t.Errorf("DOWN 1/2 (passing, not yet up) is down")
	}
	if v := viewNode("127.9.9.9", nodes, servers); v != (nodeView{}) {
		t.Errorf("unknown node: %+v", v)
	}
}

func TestDeathNodes(t *testing.T) {
	tests := []struct {
		name           string
		n, e, probe, k int
		excluded       map[int]bool
		want           []int
	}{
		// Services 0..7, endpoints on nodes i..i+4: nodes 4-7 serve 5 each.
		{"bench default", 20, 5, 8, 3, nil, []int{4, 5, 6}},
		{"excluded skipped", 20, 5, 8, 3, map[int]bool{5: true}, []int{4, 6, 7}},
		{"wraps around", 4, 2, 8, 2, nil, []int{0, 1}},
		{"fewer than asked", 20, 1, 2, 5, nil, []int{0, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := deathNodes(tc.n, tc.e, tc.probe, tc.k, tc.excluded); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOutAndBackTimes(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	base := nodeView{Status: "UP", Servers: 2, Stot: 100}
	ss := []sample{
		{at(5), nodeView{Status: "UP", Servers: 2, Stot: 100}},
		{at(10), nodeView{Status: "UP 1/2", Servers: 2, Stot: 103}},
		{at(20), nodeView{Status: "DOWN", Servers: 2, Down: 1, Stot: 104}},
		{at(30), nodeView{Status: "DOWN", Servers: 2, Down: 2, Stot: 104}},
		{at(40), nodeView{Status: "DOWN", Servers: 2, Down: 2, Stot: 104}},
	}
	want := outSeen{downAt: 20 * time.Millisecond, serversDownAt: 30 * time.Millisecond, lastConnAt: 20 * time.Millisecond}
	if got := outTimes(t0, base, ss); got != want {
		t.Errorf("out: got %+v, want %+v", got, want)
	}
	if got := outTimes(t0, base, ss[:1]); got != (outSeen{}) {
		t.Errorf("nothing seen yet: got %+v", got)
	}

	last := nodeView{Status: "DOWN", Servers: 2, Down: 2, Stot: 104}
	back := []sample{
		{at(5), nodeView{Status: "DOWN 1/2", Servers: 2, Down: 2, Stot: 104}},
		{at(15), nodeView{Status: "UP", Servers: 2, Stot: 104}},
		{at(25), nodeView{Status: "UP", Servers: 2, Stot: 105}},
	}
	up, traffic := backTimes(t0, last, back)
	if up != 15*time.Millisecond || traffic != 25*time.Millisecond {
		t.Errorf("back: up %v, traffic %v; want 15ms, 25ms", up, traffic)
	}
}

func TestSpreadOf(t *testing.T) {
	tests := []struct {
		in   []float64
		want spread
	}{
		{nil, spread{}},
		{[]float64{3}, spread{3, 3, 3}},
		{[]float64{9, 1, 5}, spread{1, 5, 9}},
		{[]float64{4, 1, 2, 8}, spread{1, 3, 8}},
	}
	for _, tc := range tests {
		if got := spreadOf(tc.in); got != tc.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	rounds := []deathRound{
		{Kind: "dead", DownMs: 3000, Connections: 100, Failed: 1, Redispatched: 7},
		{Kind: "503", DownMs: 2500, Connections: 50},
		{Kind: "dead", DownMs: 3500, Connections: 100, Reloads: 1, RuntimeCommands: 2, Passes: 1, Drift: 1},
	}
	got := summarize(rounds)
	if len(got) != 2 || got[0].Kind != "dead" || got[1].Kind != "503" {
		t.Fatalf("got %+v, want dead then 503", got)
	}
	d := got[0]
	if d.Rounds != 2 || d.DownMs != (spread{3000, 3250, 3500}) || d.Connections != 200 || d.Failed != 1 ||
		d.Redispatched != 7 || d.Reloads != 1 || d.RuntimeCommands != 2 || d.Passes != 1 || d.Drift != 1 {
		t.Errorf("dead: %+v", d)
	}
	if summarize(nil) != nil {
		t.Errorf("no rounds: want no summary")
	}
}

func TestMetricsAddress(t *testing.T) {
	log := `time=2026-11-23T00:04:02.690Z level=INFO msg=starting
time=2026-11-23T00:04:02.691Z level=INFO msg="serving metrics and health" address=127.0.0.1:33057
`
	if got := metricsAddress([]byte(log)); got != "127.0.0.1:33057" {
		t.Errorf("got %q", got)
	}
	if got := metricsAddress([]byte("level=INFO msg=starting\n")); got != "" {
		t.Errorf("not yet logged: got %q", got)
	}
}

func TestCounterSums(t *testing.T) {
	text := `# HELP haproxy_k8s_sync_runtime_commands_total Runtime API commands sent to HAProxy.
# TYPE haproxy_k8s_sync_runtime_commands_total counter
haproxy_k8s_sync_runtime_commands_total{driver="haproxy"} 12
haproxy_k8s_sync_runtime_commands_total{driver="other"} 3
# HELP haproxy_k8s_sync_pass_duration_seconds Duration of a pass.
# TYPE haproxy_k8s_sync_pass_duration_seconds histogram
haproxy_k8s_sync_pass_duration_seconds_bucket{driver="haproxy",outcome="applied",le="+Inf"} 4
haproxy_k8s_sync_pass_duration_seconds_sum{driver="haproxy",outcome="applied"} 0.5
haproxy_k8s_sync_pass_duration_seconds_count{driver="haproxy",outcome="applied"} 4
haproxy_k8s_sync_pass_duration_seconds_bucket{driver="haproxy",outcome="error",le="+Inf"} 1
haproxy_k8s_sync_pass_duration_seconds_sum{driver="haproxy",outcome="error"} 0.1
haproxy_k8s_sync_pass_duration_seconds_count{driver="haproxy",outcome="error"} 1
`
	got, err := counterSums([]byte(text), metricCommands, metricPasses, "absent_total")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{metricCommands: 15, metricPasses: 5, "absent_total": 0}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := counterSums([]byte("not { metrics"), metricCommands); err == nil {
		t.Error("garbage parsed")
	}
}
