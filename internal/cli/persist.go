package cli

import (
	"context"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
)

// persist keeps hd's config and server-state files in step with what runs
// (runtimeapi.HAProxy.Run) until the returned stop is called. Its context is
// not the command's: stop is deferred to run after the passes have ended,
// then ends persistence, which writes what is still due, and waits for it,
// so that a controller that stops leaves files that describe what runs
// (docs/architecture.md).
func persist(hd *runtimeapi.HAProxy, quiet, maxDelay time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		hd.Run(ctx, quiet, maxDelay)
	}()
	return func() {
		cancel()
		<-done
	}
}
