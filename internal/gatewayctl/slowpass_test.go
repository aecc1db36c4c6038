package gatewayctl

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
)

// TestLogSlow: a pass over slowPass logs its parts, a faster one nothing.
func TestLogSlow(t *testing.T) {
	tests := []struct {
		name string
		took time.Duration
		want string
	}{
		{"fast", time.Millisecond, ""},
		{"slow", 2 * slowPass, `msg="slow pass" snapshot=1ms`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			logSlow(slog.New(slog.NewTextHandler(&buf, nil)), time.Now().Add(-tc.took), slowParts{"snapshot", time.Millisecond})
			if got := buf.String(); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("logged %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWaitedFor: the wait of a pass's first change.
func TestWaitedFor(t *testing.T) {
	start := time.Now()
	tests := []struct {
		name string
		ctx  context.Context
		want time.Duration
	}{
		{"no change (a resync)", context.Background(), 0},
		{"a change 3 ms before", driver.WithChanged(context.Background(), start.Add(-3*time.Millisecond)), 3 * time.Millisecond},
		{"a change after the start", driver.WithChanged(context.Background(), start.Add(time.Millisecond)), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := waitedFor(tc.ctx, start); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
