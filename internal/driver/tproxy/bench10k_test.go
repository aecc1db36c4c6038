package tproxy

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gcstat"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/cputime"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// envManyServices sets BenchmarkNewServiceAmongMany's size (10,000 when
// unset): HKS_BENCH_SERVICES=1000 for a quick run.
const envManyServices = "HKS_BENCH_SERVICES"

// burst is how many new Services the burst step adds at once.
const burst = 100

// BenchmarkNewServiceAmongMany: issue 29's goal at the driver's level.
// n Services (10,000; HKS_BENCH_SERVICES) are served, each a port of
// its own on 203.0.113.10 with a backend of four servers (40,000: a
// free spare has plan.MinSlots, four, and a fifth server would make every
// new Service a reload, "server slots exhausted in _pool_N"), in
// each mode side by side in one run: ports (a frontend per port, the
// reload mode) and tproxy with --backend-pool (the fixed listener, a
// spare per Service). Each iteration applies the model with one Service
// more and times until its first connection from the client namespace
// is answered through HAProxy; then a burst of 100 new Services is
// applied at once and timed until all are answered. It reports p50 and
// p99, the burst, the reloads of each, the first apply of the n Services
// (setup-s: HAProxy reloaded with all of them and, in tproxy mode, the
// sets filled) and HAProxy's RSS (master and worker) at the end.
//
//	go test ./internal/driver/tproxy -run '^$' -bench NewServiceAmongMany -benchtime 10x -timeout 90m
func BenchmarkNewServiceAmongMany(b *testing.B) {
	n := 10000
	if s := os.Getenv(envManyServices); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > 20000 {
			b.Fatalf("%s=%q: want 1..20000", envManyServices, s)
		}
		n = v
	}
	for _, m := range []struct {
		name, mode string
		pool       bool
	}{{render.ListenersPorts, render.ListenersPorts, false}, {"tproxy+pool", render.ListenersTProxy, true}} {
		b.Run(fmt.Sprintf("%d/%s", n, m.name), func(b *testing.B) {
			var policy spares.Policy
			if m.pool {
				// Free spares for every new Service of the run, so that
				// no growth reload falls inside the timed part (b.N is
				// not known before b.Loop: -benchtime Nx is read).
				policy = spares.Policy{Spares: iterations() + burst + 2, Other: 1, LowWater: 1}
			}
			l := startDPWith(b, m.mode, policy)
			// A reload of 10,000 Services on the loaded machine takes
			// more than startDPWith's minute to be confirmed.
			opts := l.hopts
			opts.ReloadTimeout = 10 * time.Minute
			hd := runtimeapi.NewHAProxy(opts)
			b.Cleanup(func() { _ = hd.Close() })
			var drv driver.Driver = hd
			if m.mode == render.ListenersTProxy {
				l.drv.HAProxy = hd
				drv = l.drv
			}
			ipn(b, l.lab.LB, "route", "add", "local", "203.0.113.0/24", "dev", "lo")
			var servers []model.Server
			for _, name := range []string{"a", "b", "c", "d"} {
				servers = append(servers, model.Server{Addr: netip.MustParseAddr("127.0.0.1"), Port: l.server[name]})
			}
			service := func(port uint16) (model.Frontend, *model.Backend) {
				name := fmt.Sprintf("s%d", port)
				return model.Frontend{Name: "fe_" + name, Service: "default/" + name, Backend: "be_" + name,
						Binds: []model.Bind{bind(vipA, port)}},
					&model.Backend{Name: "be_" + name, Service: "default/" + name, Balance: "roundrobin", Servers: servers}
			}
			var cfg model.Config
			add := func(c model.Config, ports ...uint16) model.Config {
				c.Frontends = slices.Clone(c.Frontends)
				c.Backends = slices.Clone(c.Backends)
				for _, p := range ports {
					fe, be := service(p)
					c.Frontends = append(c.Frontends, fe)
					c.Backends = append(c.Backends, be)
				}
				// Sorted by name, as desired makes a model (model.Config):
				// the new Services' ports sort before the first n's.
				slices.SortStableFunc(c.Frontends, func(a, b model.Frontend) int { return strings.Compare(a.Name, b.Name) })
				slices.SortStableFunc(c.Backends, func(a, b *model.Backend) int { return strings.Compare(a.Name, b.Name) })
				return c
			}
			// One add of all n: an add per Service copied the growing
			// slices n times (quadratic: seconds of CPU before setup).
			all := make([]uint16, n)
			for i := range all {
				all[i] = uint16(30000 + i)
			}
			cfg = add(cfg, all...)
			ctx := context.Background()
			start := time.Now()
			res, err := drv.Apply(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("setup apply: %s", passTimes(res, time.Since(start)))
			served := func(ports ...uint16) error {
				return netlab.Eventually(ctx, 60*time.Second, func() error {
					for len(ports) > 0 {
						dst := netip.AddrPortFrom(vipA, ports[0])
						if got, err := ask(l.lab.Client, netip.Addr{}, dst); got == "" {
							return fmt.Errorf("%s: not answered (%v)", dst, err)
						}
						ports = ports[1:]
					}
					return nil
				})
			}
			if err := served(30000, uint16(30000+n-1)); err != nil {
				b.Fatal(err)
			}
			setup := time.Since(start)
			b.Logf("setup served: %.1f s", setup.Seconds())
			keepConfig(b, l.hopts.ConfigPath, m.name)
			before := l.reloads(b)
			var took, cpu []time.Duration
			var allocs uint64
			for i := 0; b.Loop(); i++ {
				port := uint16(20000 + i)
				next := add(cfg, port)
				// As desired's delta pass says it (model.FrontendChanges),
				// beside the Config, as the controller hands it.
				pass := driver.WithFrontChanges(ctx, &model.FrontendChanges{Base: cfg.Frontends, Of: next.Frontends,
					Names: []string{fmt.Sprintf("fe_s%d", port)}})
				start, c, g := time.Now(), cputime.Used(), gcstat.Read()
				res, err := drv.Apply(pass, next)
				cpu = append(cpu, cputime.Used()-c)
				allocs += gcstat.Read().Since(g).Alloc
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Reasons) > 0 {
					b.Logf("new Service %d: reload (%s)", port, strings.Join(res.Reasons, "; "))
				}
				b.Logf("new Service %d: %s", port, passTimes(res, time.Since(start)))
				if err := served(port); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
				cfg = next
			}
			reloads := l.reloads(b) - before
			// The burst, after the timed part.
			var ports []uint16
			for i := range burst {
				ports = append(ports, uint16(25000+i))
			}
			start = time.Now()
			if _, err := drv.Apply(ctx, add(cfg, ports...)); err != nil {
				b.Fatal(err)
			}
			if err := served(ports...); err != nil {
				b.Fatal(err)
			}
			burstTook := time.Since(start)
			burstReloads := l.reloads(b) - before - reloads
			q := quantilesMs(took)
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			// The Apply's own cost, the machine's load aside: the CPU the
			// process used meanwhile (the median) and the bytes it
			// allocated (the mean), the probes' excluded.
			b.ReportMetric(quantilesMs(cpu)(0.5), "apply-cpu-p50-ms")
			b.ReportMetric(float64(allocs)/float64(len(took))/1e6, "apply-MB/op")
			b.ReportMetric(float64(reloads)/float64(len(took)), "reloads/op")
			b.ReportMetric(float64(burstTook.Milliseconds()), "burst100-ms")
			b.ReportMetric(float64(burstReloads), "burst-reloads")
			b.ReportMetric(setup.Seconds(), "setup-s")
			b.ReportMetric(rssMiB(l.p.MasterPID()), "haproxy-rss-MiB")
		})
	}
}

// envKeepConfig names a directory where BenchmarkNewServiceAmongMany
// copies the config of its n Services and the files beside it (regular
// files only), one directory per mode, to time HAProxy's parse of it
// alone (haproxy -c, the original directory's name replaced: it is in
// "from").
const envKeepConfig = "HKS_BENCH_KEEP_CONFIG"

func keepConfig(b *testing.B, path, mode string) {
	keep := os.Getenv(envKeepConfig)
	if keep == "" {
		return
	}
	src, dst := filepath.Dir(path), filepath.Join(keep, strings.ReplaceAll(mode, "+", "-"))
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err == nil {
			err = os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dst, rel), data, 0o644)
		}
		return err
	})
	if err == nil {
		err = os.WriteFile(filepath.Join(dst, "from"), []byte(src), 0o644)
	}
	if err != nil {
		b.Logf("%s: %v", envKeepConfig, err)
	}
}

// passTimes is a pass's Result as the benchmark logs it, with the wall
// time of the whole Apply.
func passTimes(res driver.Result, took time.Duration) string {
	return fmt.Sprintf("apply %v (render %v, write %v, reload %v, runtime %v, ops %d)",
		took.Round(time.Millisecond), res.Render.Round(time.Millisecond), res.Write.Round(time.Millisecond),
		res.Reload.Round(time.Millisecond), res.Runtime.Round(time.Millisecond), res.Ops)
}

// quantilesMs sorts took and returns its quantile f in milliseconds.
func quantilesMs(took []time.Duration) func(f float64) float64 {
	slices.Sort(took)
	return func(f float64) float64 {
		return float64(took[min(len(took)-1, int(f*float64(len(took))))].Microseconds()) / 1000
	}
}

// iterations is -benchtime's count when it is one (Nx), else 100.
func iterations() int {
	if f := flag.Lookup("test.benchtime"); f != nil {
		if v, ok := strings.CutSuffix(f.Value.String(), "x"); ok {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
	}
	return 100
}

// rssMiB is the resident memory of a process and its children (HAProxy's
// master and workers), in MiB; 0 when unreadable.
func rssMiB(pid int) float64 {
	var kb int
	pids := []int{pid}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err == nil {
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				pids = append(pids, c)
			}
		}
	}
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				if k, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB")); err == nil {
					kb += k
				}
			}
		}
	}
	return float64(kb) / 1024
}
