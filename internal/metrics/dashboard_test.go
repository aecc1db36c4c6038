package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The Grafana dashboard shipped in deploy/grafana is valid JSON, and every
// metric its queries name is one the controller exports.
func TestDashboardRefersToExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/grafana/haproxy-k8s-sync.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard is not valid JSON: %v", err)
	}
	var queries []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if s, ok := c.(string); ok && (k == "expr" || k == "query") {
					queries = append(queries, s)
				}
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(dash)
	if len(queries) < 10 {
		t.Fatalf("found %d queries in the dashboard", len(queries))
	}

	exported := exportedNames(t)
	name := regexp.MustCompile(`haproxy_k8s_sync_[a-z0-9_]+`)
	seen := 0
	for _, q := range queries {
		for _, n := range name.FindAllString(q, -1) {
			seen++
			if !exported[n] {
				t.Errorf("the dashboard queries %s, which the controller does not export (in %q)", n, q)
			}
		}
	}
	if seen == 0 {
		t.Error("the dashboard queries no metric of ours")
	}
}

// exportedNames lists the sample names the registry exposes, histograms'
// _bucket, _sum and _count included, once every series exists.
func exportedNames(t *testing.T) map[string]bool {
	r := New(Options{Version: "test"})
	in := r.Instance("haproxy")
	in.Pass(OutcomeApplied, time.Millisecond)
	in.Phase(PhaseParse, time.Millisecond)
	in.Reload([]string{"frontend added fe"}, true)
	in.Reload([]string{"frontend added fe"}, false)
	in.Model(model.Config{})
	in.Services(0, nil)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "dashboard-test"})
	q.AddRateLimited("x")
	defer q.ShutDown()
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, mf := range mfs {
		n := mf.GetName()
		out[n] = true
		if strings.HasSuffix(mf.GetType().String(), "HISTOGRAM") {
			out[n+"_bucket"], out[n+"_sum"], out[n+"_count"] = true, true, true
		}
	}
	return out
}
