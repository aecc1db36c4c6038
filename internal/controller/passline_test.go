package controller

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// collectingDriver allocates size bytes and has the collector run once
// in each Apply, and says it sent one operation (an info line).
type collectingDriver struct {
	size int
	sink []byte
}

func (d *collectingDriver) Apply(context.Context, model.Config) (driver.Result, error) {
	d.sink = make([]byte, d.size)
	runtime.GC()
	return driver.Result{Ops: 1}, nil
}

// TestPassLineTellsItsCollections: a pass's update line says how long
// the driver's Apply took (apply=) and what the pass allocated and
// collected (gcs=, alloc=, gc_pause=, gc_assist=), as the gateway loop's
// does: the churn's tail in tproxy mode was a matter of collections
// (issue 29), which the line did not show.
func TestPassLineTellsItsCollections(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	drv := &collectingDriver{size: 4 << 20}
	c, src := testController(nil, drv, Options{Logger: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{ReplaceAttr: dropTime}))})
	syncCaches(ctx, t, src)
	if _, err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	u, ok := parseLine(out.String())
	if !ok {
		t.Fatalf("no update line in %q", out.String())
	}
	for _, tc := range []struct {
		field string
		least int64
	}{{"gcs", 1}, {"alloc", int64(drv.size)}} {
		v, err := strconv.ParseInt(u[tc.field], 10, 64)
		if err != nil || v < tc.least {
			t.Errorf("%s=%q, want at least %d", tc.field, u[tc.field], tc.least)
		}
	}
	for _, field := range []string{"apply", "gc_pause", "gc_assist"} {
		if _, err := time.ParseDuration(u[field]); err != nil {
			t.Errorf("%s=%q: want a duration", field, u[field])
		}
	}
}

// parseLine is the fields of the first update line of a text log.
func parseLine(log string) (map[string]string, bool) {
	for _, line := range bytes.Split([]byte(log), []byte("\n")) {
		if !bytes.Contains(line, []byte("msg=update")) {
			continue
		}
		fields := map[string]string{}
		for _, f := range bytes.Fields(line) {
			if k, v, ok := bytes.Cut(f, []byte("=")); ok {
				fields[string(k)] = string(v)
			}
		}
		return fields, true
	}
	return nil, false
}
