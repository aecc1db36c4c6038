package haproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// BenchmarkReloadToServing measures, per HAProxy version, a reload that
// adds a frontend, from Master.Reload to the first connection served
// through it: the reload as the master confirms it (its own answer on 2.7+,
// show proc polled on 2.6; reload-ms) plus the wait until the new worker
// serves (serving-ms). Every version listed in HKS_HAPROXY_BINS
// ("2.6=/usr/sbin/haproxy 3.0=/path/to/haproxy") runs side by side in one
// run; without it, the tests' binary (haproxytest.Bin). `make
// bench-versions` sets it from hack/haproxy-version.sh (BENCHMARKS.md).
func BenchmarkReloadToServing(b *testing.B) {
	bins := map[string]string{}
	var order []string
	for _, kv := range strings.Fields(os.Getenv("HKS_HAPROXY_BINS")) {
		name, bin, ok := strings.Cut(kv, "=")
		if !ok {
			b.Fatalf("HKS_HAPROXY_BINS: %q is not VERSION=PATH", kv)
		}
		bins[name], order = bin, append(order, name)
	}
	if len(order) == 0 {
		bins["default"], order = haproxytest.Bin(), []string{"default"}
	}
	for _, name := range order {
		b.Run(name, func(b *testing.B) { benchReloadToServing(b, bins[name]) })
	}
}

func benchReloadToServing(b *testing.B, bin string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := b.TempDir()
	server := greeter(b, "hi\n")
	path := filepath.Join(dir, "haproxy.cfg")
	write := func(fePort int) {
		cfg := haproxytest.MinimalConfig(dir) + fmt.Sprintf(`
frontend fe
    bind 127.0.0.1:%d
    default_backend be

backend be
    server s1 127.0.0.1:%d
`, fePort, server)
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	write(haproxytest.FreePort(b))
	p := haproxytest.StartWith(b, bin, dir, path)
	m := NewMaster(p.MasterSocket)
	var reload, serving time.Duration
	var answered int
	var version string
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		fe := haproxytest.FreePort(b)
		write(fe)
		b.StartTimer()
		start := time.Now()
		res, err := m.ReloadReport(ctx)
		if err != nil {
			b.Fatalf("reload: %v", err)
		}
		reloaded := time.Now()
		if err := served(fmt.Sprintf("127.0.0.1:%d", fe), 10*time.Second); err != nil {
			b.Fatalf("after reload: %v", err)
		}
		reload += reloaded.Sub(start)
		serving += time.Since(reloaded)
		if res.Answered {
			answered++
		}
		version = res.Version.Text
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(reload.Milliseconds())/n, "reload-ms")
	b.ReportMetric(float64(serving.Microseconds())/1000/n, "serving-ms")
	b.ReportMetric(float64(answered)/n, "answered")
	b.Logf("%s: %s", bin, version)
}

// served polls addr until a connection through it reads the greeter's
// answer, for at most within.
func served(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	var err error
	for time.Now().Before(deadline) {
		var c net.Conn
		if c, err = net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			var got []byte
			got, err = io.ReadAll(c)
			c.Close()
			if err == nil && string(got) == "hi\n" {
				return nil
			}
			if err == nil {
				err = fmt.Errorf("read %q", got)
			}
		}
		t := time.NewTimer(time.Millisecond)
		<-t.C
	}
	return fmt.Errorf("%s not served after %s: %w", addr, within, err)
}
