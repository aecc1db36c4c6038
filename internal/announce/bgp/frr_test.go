package bgp

import (
	"fmt"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/proc"
)

// frrDir is where Debian's frr package keeps its daemons.
const frrDir = "/usr/lib/frr"

// newFRRLab is newLab with FRR (Debian's frr: zebra and bgpd, each a
// process in the router's namespace with its own pid files, sockets and
// the one configuration file) as the router instead of BIRD: a passive
// eBGP session per host, every route taken, equal ones up to 8 paths
// (maximum-paths), installed by zebra in the namespace's kernel table.
// It skips without FRR (apt-get install frr; make deps).
func newFRRLab(t testing.TB, n int) *lab {
	t.Helper()
	for _, d := range []string{"zebra", "bgpd"} {
		if _, err := os.Stat(filepath.Join(frrDir, d)); err != nil {
			t.Skip("no FRR (apt-get install frr; make deps)")
		}
	}
	l := newHostsLab(t, n, birdOpts{})
	// the daemons run as Debian's frr user: their sockets, pid files
	// and logs go in the lab's directory
	for _, d := range []string{filepath.Dir(l.dir), l.dir} {
		mode := os.FileMode(0o755)
		if d == l.dir {
			mode = 0o777
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "frr defaults traditional\nhostname router\nlog stdout informational\n!\nrouter bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n", routerASN, l.router.Addr)
	for _, h := range l.lbs {
		fmt.Fprintf(&b, " neighbor %s remote-as %d\n neighbor %s passive\n neighbor %s timers connect 1\n", h.Addr, hostASN, h.Addr, h.Addr)
	}
	b.WriteString(" address-family ipv4 unicast\n  maximum-paths 8\n exit-address-family\n!\n")
	conf := filepath.Join(l.dir, "frr.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	zsock := filepath.Join(l.dir, "zserv.api")
	for _, d := range []struct{ name string }{{"zebra"}, {"bgpd"}} {
		args := []string{"netns", "exec", l.router.NS, filepath.Join(frrDir, d.name), "-f", conf,
			"-i", filepath.Join(l.dir, d.name+".pid"), "-z", zsock, "--vty_socket", l.dir, "-A", "127.0.0.1", "-P", "0"}
		p, err := proc.Start(d.name, filepath.Join(l.dir, d.name+".log"), "ip", proc.Options{}, args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			p.Stop(5 * time.Second)
			if t.Failed() {
				t.Logf("%s:\n%s", d.name, p.Tail(30))
			}
		})
		if d.name == "zebra" {
			if err := proc.WaitFor(10*time.Second, 50*time.Millisecond, p, func() error { _, err := os.Stat(zsock); return err }); err != nil {
				t.Fatal(err)
			}
		}
	}
	l.vtysh = func(cmd string) (string, error) {
		out, err := exec.Command("/usr/bin/vtysh", "--vty_socket", l.dir, "-c", cmd).CombinedOutput()
		return string(out), err
	}
	return l
}

// TestFRRRouter, the second real router (FRR 8.4, Debian's): two healthy
// hosts give it two equal paths, one multipath route in its kernel table
// (new connections answered by both); a host whose gate fails withdraws
// and its traffic moves to the other; healthy again, both; a host with
// a higher MED is the backup.
func TestFRRRouter(t *testing.T) {
	l := newFRRLab(t, 2)
	lb1, lb2 := l.lbs[0], l.lbs[1]
	w := announce.Want{Addrs: []netip.Addr{vip4}, Healthy: true}
	l.start(lb1, speakerFile{Config: Config{RestartTime: 30 * time.Second}}, w)
	l.start(lb2, speakerFile{Config: Config{RestartTime: 30 * time.Second}}, w)
	if err := l.waitNexthops(vip4, up, lb1, lb2); err != nil {
		out, _ := l.vtysh("show ip bgp")
		t.Fatalf("%v\n%s", err, out)
	}
	if err := l.answeredByBoth(vip4); err != nil {
		t.Fatal(err)
	}
	sick := w
	sick.Healthy = false
	start := time.Now()
	l.set(lb1, sick)
	if err := l.waitNexthops(vip4, time.Second, lb2); err != nil {
		t.Fatal(err)
	}
	t.Logf("withdrawn from FRR's kernel route %s after the gate failed", time.Since(start).Round(time.Millisecond))
	if name, err := l.ask(vip4, time.Second); err != nil || name != lb2.Name {
		t.Fatalf("answered by %q (%v), want lb2", name, err)
	}
	l.set(lb1, w)
	if err := l.waitNexthops(vip4, 2*time.Second, lb1, lb2); err != nil {
		t.Fatal(err)
	}

	// lb2 again with a higher MED: the backup
	l.spk[lb2.Name].Stop(5 * time.Second)
	l.start(lb2, speakerFile{Config: Config{MED: 100}}, w)
	if err := l.waitNexthops(vip4, up, lb1); err != nil {
		t.Fatal(err)
	}
	out, err := l.vtysh("show ip bgp " + vip4.String())
	if err != nil || !strings.Contains(out, "2 available") {
		t.Fatalf("FRR does not hold both paths (the backup's too): %v\n%s", err, out)
	}
}
