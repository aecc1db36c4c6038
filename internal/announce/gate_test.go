package announce

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestHealthCheckHangSaysSo: HAProxy answered, then hangs. Whichever of
// the question's own deadline and the grace since the last answer a
// (late, on a loaded node) tick sees first, the check fails with
// ErrGateHAProxy and says the question went unanswered: here the tick's
// deadline is longer than the grace, so the question's deadline fires
// first (the order CI's loaded run saw).
func TestHealthCheckHangSaysSo(t *testing.T) {
	hang := false
	ask := func(ctx context.Context) error {
		if !hang {
			return nil
		}
		<-ctx.Done()
		return fmt.Errorf("exec: %w", ctx.Err())
	}
	check := HealthCheck(func(context.Context) error { return nil }, ask)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := check(ctx); err != nil {
		t.Fatalf("HAProxy answering: %v", err)
	}
	hang = true // the question in flight is the next one: asked after this
	late, cancel2 := context.WithTimeout(context.Background(), AnswerGrace+time.Second)
	defer cancel2()
	err := check(late)
	if !errors.Is(err, ErrGateHAProxy) || !strings.Contains(fmt.Sprint(err), "no answer yet") {
		t.Fatalf("hung HAProxy: %v, want ErrGateHAProxy saying no answer yet", err)
	}
}
