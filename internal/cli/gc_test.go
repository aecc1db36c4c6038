package cli

import (
	"io"
	"log/slog"
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name string
		env  map[string]string
		want int
	}{
		{"default", nil, defaultGCPercent},
		{"GOGC set", map[string]string{"GOGC": "200"}, 123},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "200MiB"}, 123},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := debug.SetGCPercent(123)
			defer debug.SetGCPercent(old)
			tuneGC(func(k string) string { return tc.env[k] }, log)
			if got := debug.SetGCPercent(123); got != tc.want {
				t.Errorf("GC percent %d, want %d", got, tc.want)
			}
		})
	}
}
