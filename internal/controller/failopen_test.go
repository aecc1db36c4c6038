package controller

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
)

// The fail-open state is reported once when it begins (a log line, a
// Warning Event on each node kept) and once when it ends (a log line),
// and the gauge follows every pass.
func TestFailOpenReported(t *testing.T) {
	nodes := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, {ObjectMeta: metav1.ObjectMeta{Name: "n2"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "n3"}}}
	passes := []struct {
		kept   []string
		log    string // the line logged by this pass, "" for none
		events []string
	}{
		{kept: nil},
		{kept: []string{"n1", "n2"}, log: "level=WARN msg=\"every node NotReady: keeping them as servers (fail open) until one is Ready\" nodes=\"[n1 n2]\"",
			events: []string{"Warning NotReadyKept", "Warning NotReadyKept"}},
		{kept: []string{"n1", "n2"}},
		{kept: []string{"n1", "n2", "n3"}}, // a node more: still the same state
		{kept: nil, log: "level=INFO msg=\"a node is Ready again: NotReady nodes no longer serve (fail open over)\""},
		{kept: nil},
		{kept: []string{"n3"}, log: "level=WARN", events: []string{"Warning NotReadyKept"}},
	}
	var out bytes.Buffer
	rec := record.NewFakeRecorder(20)
	reg := metrics.New(metrics.Options{})
	m := reg.Instance("haproxy")
	c := New(nil, &countingDriver{}, rec, Options{Metrics: m,
		Logger: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{ReplaceAttr: dropTime}))})
	for i, p := range passes {
		out.Reset()
		c.failOpen(p.kept, nodes)
		if got := strings.TrimSpace(out.String()); !strings.HasPrefix(got, p.log) || (p.log == "") != (got == "") {
			t.Errorf("pass %d: logged %q, want %q", i, got, p.log)
		}
		var events []string
		for len(rec.Events) > 0 {
			e := <-rec.Events
			events = append(events, e[:strings.Index(e, " every")])
		}
		if strings.Join(events, ",") != strings.Join(p.events, ",") {
			t.Errorf("pass %d: events %q, want %q", i, events, p.events)
		}
		if got, _ := testutil.GatherAndCount(reg.Gatherer(), "haproxy_k8s_sync_nodes_not_ready_kept"); got != 1 {
			t.Errorf("pass %d: %d series of the gauge", i, got)
		}
		if err := testutil.GatherAndCompare(reg.Gatherer(), strings.NewReader(gaugeText(len(p.kept))), "haproxy_k8s_sync_nodes_not_ready_kept"); err != nil {
			t.Errorf("pass %d: %v", i, err)
		}
	}
}

func gaugeText(n int) string {
	return "# HELP haproxy_k8s_sync_nodes_not_ready_kept NotReady nodes kept as servers because no node that may serve is Ready (fail open); 0 otherwise.\n" +
		"# TYPE haproxy_k8s_sync_nodes_not_ready_kept gauge\n" +
		"haproxy_k8s_sync_nodes_not_ready_kept{driver=\"haproxy\"} " + string(rune('0'+n)) + "\n"
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// Addresses that are no servers (desired.Result.Skipped) are logged, one
// line each naming its object, when the list changes, not every pass.
func TestSkippedLoggedOnChange(t *testing.T) {
	var out bytes.Buffer
	c := New(nil, &countingDriver{}, nil, Options{Logger: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{ReplaceAttr: dropTime}))})
	zero := `Node "n1": InternalIP "0.0.0.0" is the unspecified address: not a server`
	for i, p := range []struct {
		skipped []string
		lines   int
	}{{nil, 0}, {[]string{zero}, 1}, {[]string{zero}, 0}, {[]string{zero, "Node \"n2\": ..."}, 2}, {nil, 0}, {[]string{zero}, 1}} {
		out.Reset()
		c.logSkipped(p.skipped)
		if got := strings.Count(out.String(), "level=WARN msg=\"address skipped: "); got != p.lines || p.lines > 0 && !strings.Contains(out.String(), `Node \"n1\"`) {
			t.Errorf("pass %d: logged %q, want %d lines", i, out.String(), p.lines)
		}
	}
}
