package driver

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		name  string
		res   Result
		err   error
		later bool
		after time.Duration
	}{
		{"applied", Result{RetryAfter: 3 * time.Second}, nil, false, 0},
		{"reload put off, wrapped", Result{RetryAfter: 3 * time.Second}, fmt.Errorf("instance a: %w", ErrDeferred), true, 3 * time.Second},
		{"failed", Result{RetryAfter: 3 * time.Second}, errors.New("socket unavailable"), false, 0},
		{"applied, work under way", Result{Again: 250 * time.Millisecond}, nil, true, 250 * time.Millisecond},
		{"failed with work under way: a retry", Result{Again: 250 * time.Millisecond}, errors.New("socket unavailable"), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Outcome(tc.res, tc.err)
			if o.Later != tc.later || !errors.Is(o.Err, tc.err) || (tc.later && o.After != tc.after) {
				t.Errorf("Outcome = %+v, want Later %v with the error kept and After %v when later", o, tc.later, tc.after)
			}
		})
	}
}

func TestLogPass(t *testing.T) {
	for _, tc := range []struct {
		name  string
		res   Result
		err   error
		level string
		want  []string // in the line
		not   []string
	}{
		{"nothing to do", Result{}, nil, "DEBUG", []string{"services=3", "parse=", "render=", "ops=0", "total="}, []string{"reloaded", "err=", "reload_in"}},
		{"reloaded", Result{Reloaded: true, Reasons: []string{"frontend added"}}, nil, "INFO", []string{"reloaded=true", "reasons=\"[frontend added]\""}, []string{"err="}},
		{"runtime ops", Result{Ops: 2}, nil, "INFO", []string{"ops=2"}, []string{"reloaded"}},
		{"reload put off", Result{RetryAfter: time.Second}, fmt.Errorf("instance a: %w", ErrDeferred), "INFO", []string{"reload_in=1s"}, []string{"err="}},
		{"failed", Result{}, errors.New("socket unavailable"), "INFO", []string{"err=\"socket unavailable\""}, []string{"reload_in"}},
		{"work under way", Result{Ops: 1, Again: 250 * time.Millisecond}, nil, "INFO", []string{"again_in=250ms"}, []string{"err=", "reload_in"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			LogPass(log, time.Now(), tc.res, tc.err, "services", 3, "parse", time.Millisecond)
			line := buf.String()
			if !strings.Contains(line, "level="+tc.level+" msg=update ") {
				t.Errorf("not an update at %s: %s", tc.level, line)
			}
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("%q missing: %s", w, line)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(line, n) {
					t.Errorf("%q in: %s", n, line)
				}
			}
		})
	}
}
