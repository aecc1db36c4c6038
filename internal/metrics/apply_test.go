package metrics

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func TestApplied(t *testing.T) {
	for _, tc := range []struct {
		name                           string
		res                            driver.Result
		err                            error
		outcome                        string
		reloads, fails, cmds, cmdFails float64
	}{
		{name: "runtime only", res: driver.Result{Ops: 3, Runtime: time.Millisecond}, outcome: OutcomeApplied, cmds: 3},
		{name: "reloaded", res: driver.Result{Reloaded: true, Reasons: []string{"frontend added fe"}, Reload: time.Millisecond}, outcome: OutcomeApplied, reloads: 1},
		{name: "deferred", res: driver.Result{Ops: 1, Runtime: time.Millisecond}, err: fmt.Errorf("x: %w", driver.ErrDeferred), outcome: OutcomeDeferred, cmds: 1},
		{name: "reload failed", res: driver.Result{Reasons: []string{"backend changed be"}, Check: time.Millisecond, Ops: 1, OpsFailed: 2}, err: errors.New("boom"), outcome: OutcomeError, fails: 1, cmds: 3, cmdFails: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(Options{})
			in := r.Instance("x")
			cfg := model.Config{Frontends: []model.Frontend{{Name: "fe"}}}
			in.Applied(cfg, tc.res, tc.err, 0, time.Millisecond)
			if got := in.LastOutcome(); got != tc.outcome {
				t.Errorf("outcome %q, want %q", got, tc.outcome)
			}
			for _, c := range []struct {
				name      string
				got, want float64
			}{
				{"reloads", float64(testutil.CollectAndCount(r.reloads)), tc.reloads},
				{"reload failures", float64(testutil.CollectAndCount(r.reloadFails)), tc.fails},
				{"commands", testutil.ToFloat64(r.cmdsSent.WithLabelValues("x")), tc.cmds},
				{"command failures", testutil.ToFloat64(r.cmdsFailed.WithLabelValues("x")), tc.cmdFails},
			} {
				if c.got != c.want {
					t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
				}
			}
			if n := testutil.CollectAndCount(r.phaseDuration); n != 1 {
				t.Errorf("phase series %d, want the one that ran", n)
			}
			if fe := testutil.CollectAndCount(r.model, "haproxy_k8s_sync_frontends"); fe != 1 {
				t.Errorf("frontends series %d", fe)
			}
		})
	}
}

// The open files a reload's configuration needs and HAProxy's limit are
// kept from the last pass that computed them.
func TestAppliedFileDescriptors(t *testing.T) {
	r := New(Options{})
	in := r.Instance("x")
	cfg := model.Config{}
	for _, c := range []struct {
		name          string
		fds           driver.FDs
		need, limited float64
	}{
		{"no reload: none yet", driver.FDs{}, 0, 0},
		{"refused", driver.FDs{Need: 304, Limit: 300}, 304, 300},
		{"no reload since: kept", driver.FDs{}, 304, 300},
		{"limit unknown", driver.FDs{Need: 264}, 264, 0},
	} {
		in.Applied(cfg, driver.Result{FDs: c.fds}, nil, 0, time.Millisecond)
		need := testutil.ToFloat64(r.fds.WithLabelValues("x", "needed"))
		limit := testutil.ToFloat64(r.fds.WithLabelValues("x", "limit"))
		if need != c.need || limit != c.limited {
			t.Errorf("%s: needed %v limit %v, want %v %v", c.name, need, limit, c.need, c.limited)
		}
	}
}
