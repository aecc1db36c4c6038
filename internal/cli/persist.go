package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// ensureDir creates the directory of path (a state file named by flag),
// so that the first save does not fail; when it cannot, run fails at
// start and says the way out.
func ensureDir(path, flag string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("%s: the directory %s does not exist and cannot be created (%w): create it (the chart, deploy/ and the systemd units do), or give %s a path in a writable directory", flag, dir, err, flag)
	}
	return nil
}
