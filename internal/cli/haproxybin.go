package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
)

// checkHAProxy refuses a local HAProxy the controller does not support,
// before anything starts: --haproxy-bin's `haproxy -vv` must name a release
// of the supported range built with every feature the controller relies on
// (haproxy.Build.Supported: the error names the version and what is
// missing). It logs the version found, once per process.
func (f *runFlags) checkHAProxy(log *slog.Logger) error {
	if f.binChecked {
		return nil
	}
	b, err := haproxy.Inspect(context.Background(), f.bin)
	if err == nil {
		err = b.Supported()
	}
	if err != nil {
		return fmt.Errorf("--haproxy-bin %s: %w", f.bin, err)
	}
	f.binChecked, f.binVersion = true, b.Version
	log.Info("haproxy binary", "bin", f.bin, "version", b.Version.Text)
	return nil
}
