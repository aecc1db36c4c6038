package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
)

// /readyz: the mode's own precondition first (caches synced, or in the
// apiserver mode a list known), then an applied or deferred pass, else
// HAProxy answering on its socket.
func TestReadiness(t *testing.T) {
	reg := metrics.New(metrics.Options{})
	noSocket := filepath.Join(t.TempDir(), "admin.sock")
	for _, tc := range []struct {
		name      string
		synced    bool
		notSynced string
		outcome   string
		want      string // "" ready, else part of the error
	}{
		{"services, caches not synced", false, "", metrics.OutcomeApplied, "informer caches not synced"},
		{"apiserver, no list yet", false, "no apiserver known yet", metrics.OutcomeApplied, "no apiserver known yet"},
		{"applied", true, "no apiserver known yet", metrics.OutcomeApplied, ""},
		{"deferred", true, "", metrics.OutcomeDeferred, ""},
		{"failed, HAProxy unreachable", true, "", metrics.OutcomeError, "HAProxy is unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := reg.Instance(strings.ReplaceAll(tc.name, " ", "_"))
			inst.Pass(tc.outcome, time.Millisecond)
			r := &readiness{synced: func() bool { return tc.synced }, notSynced: tc.notSynced, inst: inst, socket: noSocket}
			err := r.ready(context.Background())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("not ready: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
