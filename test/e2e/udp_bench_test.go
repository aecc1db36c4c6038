package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/nftables"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/nft"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// BenchmarkUDPNodeLeave measures change-to-forward latency of the kernel's
// UDP path: from the return of the API write that makes a node NotReady
// (then Ready again) until the node's server is out of (back in) the
// port's map in the kernel, read through netlink every 0.5 ms. Each
// iteration is one leave and one return, cycling over three nodes; p50 and
// p99 of each are reported. BENCHMARKS.md records the numbers:
// go test -run '^$' -bench UDPNodeLeave -benchtime 40x ./test/e2e
func BenchmarkUDPNodeLeave(b *testing.B) {
	net := netlab.New(b, 3)
	net.Echo(udpNodePort)
	kube := kubeapi.Start(b)
	client := kube.Client(b)
	dir := b.TempDir()
	cfgPath := initHAProxy(b, dir)
	hap := haproxytest.Start(b, dir, cfgPath)
	for _, n := range net.Nodes {
		if err := lab.CreateNode(bg, client, n.Name, n.Addr.String(), true); err != nil {
			b.Fatal(err)
		}
	}
	svc, err := lab.CreateService(bg, client, lab.Service{Namespace: ns, Name: "wg", Port: udpPort, NodePort: udpNodePort})
	if err == nil {
		svc.Spec.Ports[0].Protocol = "UDP"
		_, err = client.CoreV1().Services(ns).Update(bg, svc, metav1.UpdateOptions{})
	}
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := &haproxytest.LockedBuffer{}
	go func() {
		done <- cli.Run(ctx, []string{"--kubeconfig", kube.KubeconfigPath, "--haproxy-config", cfgPath,
			"--haproxy-bin", haproxytest.Bin(), "--master-socket", hap.MasterSocket, "--stats-socket", hap.StatsSocket,
			"--state-file", filepath.Join(dir, "state"), "--metrics-address", "", "--log-level", "info", "--listeners=ports",
			"--udp=nftables", "--udp-netns", netlab.Path(net.LB), "--udp-ip-forward=enable", "--udp-health=none"},
			func(string) string { return "" }, log)
	}()
	b.Cleanup(func() {
		cancel()
		<-done
	})

	fd, err := os.Open(netlab.Path(net.LB))
	if err != nil {
		b.Fatal(err)
	}
	defer fd.Close()
	conn, err := nftables.New(nftables.WithNetNSFd(int(fd.Fd())))
	if err != nil {
		b.Fatal(err)
	}
	table := &nftables.Table{Family: nftables.TableFamilyINet, Name: nft.Table}
	// in reports whether the node's address is a server of the port.
	in := func(n *netlab.Node) bool {
		set, err := conn.GetSetByName(table, "udp_default_wg_51820_v4")
		if err != nil {
			return false
		}
		els, err := conn.GetSetElements(set)
		if err != nil {
			return false
		}
		return slices.ContainsFunc(els, func(e nftables.SetElement) bool { return bytes.HasPrefix(e.Val, n.Addr.AsSlice()) })
	}
	wait := func(n *netlab.Node, want bool) (time.Duration, error) {
		start := time.Now()
		for in(n) != want {
			if time.Since(start) > converge {
				return 0, fmt.Errorf("%s: in=%v not reached in %v", n.Name, want, converge)
			}
			time.Sleep(500 * time.Microsecond) // poll interval
		}
		return time.Since(start), nil
	}
	for _, n := range net.Nodes {
		if _, err := wait(n, true); err != nil {
			b.Fatalf("%v\n%s", err, log.String())
		}
	}
	var leave, back []time.Duration
	b.ResetTimer()
	for i := range b.N {
		n := net.Nodes[i%len(net.Nodes)]
		for _, ready := range []bool{false, true} {
			if err := lab.SetNodeReady(bg, client, n.Name, ready); err != nil {
				b.Fatal(err)
			}
			d, err := wait(n, ready)
			if err != nil {
				b.Fatal(err)
			}
			if ready {
				back = append(back, d)
			} else {
				leave = append(leave, d)
			}
		}
	}
	b.StopTimer()
	for name, ds := range map[string][]time.Duration{"leave": leave, "return": back} {
		slices.Sort(ds)
		b.ReportMetric(ms(ds[len(ds)/2]), name+"-p50-ms")
		b.ReportMetric(ms(ds[(len(ds)*99)/100]), name+"-p99-ms")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
