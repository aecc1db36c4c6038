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
		err   error
		later bool
	}{
		{"applied", nil, false},
		{"reload put off, wrapped", fmt.Errorf("instance a: %w", ErrDeferred), true},
		{"failed", errors.New("socket unavailable"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Outcome(Result{RetryAfter: 3 * time.Second}, tc.err)
			if o.Later != tc.later || !errors.Is(o.Err, tc.err) || (tc.later && o.After != 3*time.Second) {
				t.Errorf("Outcome = %+v, want Later %v with the error kept and After 3s when later", o, tc.later)
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
