package nft

import (
	"context"
	"net/netip"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// BenchmarkUDPPath measures, in one set of namespaces (client, load
// balancer, one node with a UDP echo server), the round trip and the
// packet rate of three paths from the client to the node's echo server:
//
//   - routed: straight to the node through the load balancer's forwarding
//     (no NAT; the floor),
//   - kernel: to the load balancer's port, DNAT + masquerade by this
//     package's table,
//   - socat: to a userspace relay on the load balancer
//     (socat UDP4-LISTEN,fork to the node).
//
// rtt: one flow, one datagram in flight (ns/op is one round trip);
// rate: 16 flows in parallel, one datagram in flight each (pkt/s).
// BENCHMARKS.md records the numbers: go test -run '^$' -bench UDPPath ./internal/driver/nft
func BenchmarkUDPPath(b *testing.B) {
	lab := netlab.New(b, 1)
	lab.Echo(nodePort)
	node := lab.Nodes[0]
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	d, err := New(ctx, Options{NetNS: netlab.Path(lab.LB), EnableForwarding: true, Health: Health{Kind: "none"}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := d.Apply(ctx, model.Config{UDP: []model.UDPService{wg(model.BalanceRoundRobin, node)}}); err != nil {
		b.Fatal(err)
	}
	paths := map[string]netip.AddrPort{
		"routed": netip.AddrPortFrom(node.Addr, nodePort),
		"kernel": listen,
	}
	if _, err := exec.LookPath("socat"); err == nil {
		relay := netip.AddrPortFrom(netlab.LBAddr, 4000)
		cmd := exec.Command("ip", "netns", "exec", lab.LB, "socat", "-T5",
			"UDP4-LISTEN:4000,fork,reuseaddr", "UDP4:"+netip.AddrPortFrom(node.Addr, nodePort).String())
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
		paths["socat"] = relay
	}
	src := netip.MustParseAddrPort("192.0.2.2:0")
	for _, name := range []string{"routed", "kernel", "socat"} {
		dst, ok := paths[name]
		if !ok {
			continue
		}
		// Wait for the path (socat starting) and warm it up.
		warm := lab.Dial(src, dst)
		if err := netlab.Eventually(ctx, 5*time.Second, func() error { _, err := warm.Ask(100 * time.Millisecond); return err }); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		b.Run(name+"/rtt", func(b *testing.B) {
			f := lab.Dial(src, dst)
			lost := 0
			b.ResetTimer()
			for range b.N {
				if _, err := f.Ask(200 * time.Millisecond); err != nil {
					lost++
				}
			}
			b.ReportMetric(float64(lost), "lost")
		})
		b.Run(name+"/rate", func(b *testing.B) {
			const flows = 16
			fs := make([]*netlab.Flow, flows)
			for i := range fs {
				fs[i] = lab.Dial(src, dst)
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			lost := 0
			b.ResetTimer()
			start := time.Now()
			for i, f := range fs {
				n := b.N / flows
				if i < b.N%flows {
					n++
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range n {
						if _, err := f.Ask(200 * time.Millisecond); err != nil {
							mu.Lock()
							lost++
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pkt/s")
			b.ReportMetric(float64(lost), "lost")
		})
	}
}
