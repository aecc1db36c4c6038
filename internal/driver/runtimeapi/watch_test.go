package runtimeapi

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// An answer of the old worker that arrives after the driver's own reload
// must not make the driver forget what runs (a full read-back of every
// slot); a new worker the driver did not start must.
func TestWatchIgnoresAnswersFromBeforeOwnReload(t *testing.T) {
	l := startLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := model.Config{Backends: []*model.Backend{{Name: "be_a", Balance: "roundrobin"}}}
	if _, err := l.d.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	l.d.mu.Lock()
	epoch, oldPid := l.d.pidEpoch, l.d.pid
	l.d.mu.Unlock()

	cfg.Backends = append(cfg.Backends, &model.Backend{Name: "be_b", Balance: "roundrobin"})
	if res, err := l.d.Apply(ctx, cfg); err != nil || !res.Reloaded {
		t.Fatalf("second apply: reloaded %v, %v", res.Reloaded, err)
	}
	triggered := 0
	trigger := func() { triggered++ }
	for _, err := range []error{nil, errors.New("socket closed by the reload")} {
		if down := l.d.observe(epoch, oldPid, err, false, trigger); down || !l.d.known || triggered != 0 {
			t.Fatalf("stale answer (err %v): down %v, known %v, triggered %d", err, down, l.d.known, triggered)
		}
	}
	l.d.mu.Lock()
	epoch = l.d.pidEpoch
	l.d.mu.Unlock()
	if l.d.observe(epoch, "999999", nil, false, trigger); l.d.known || triggered != 1 {
		t.Fatalf("unknown worker: known %v, triggered %d", l.d.known, triggered)
	}
}
