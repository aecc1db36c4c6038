package netlab

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Segment is one Ethernet segment: a namespace holding a bridge (the
// switch) and hosts on it, each a namespace with eth0 on a port of the
// bridge. Host i (from 1) is 192.0.2.i/24 and 2001:db8::i/64.
type Segment struct {
	t      testing.TB
	Bridge string // the switch's namespace
	Hosts  []*Host
}

// Host is one namespace on a Segment.
type Host struct {
	Name        string // as given to NewSegment
	NS          string
	Addr, Addr6 netip.Addr
	port        string // its port on the bridge
}

// NewSegment builds a segment with a host per name, or skips the test
// when it cannot (not root, no `ip`).
func NewSegment(t testing.TB, names ...string) *Segment {
	t.Helper()
	p := prefix(t)
	l := &Lab{t: t}
	s := &Segment{t: t, Bridge: p + "sw"}
	l.addNS(s.Bridge)
	l.ip(s.Bridge, "link", "add", "br0", "type", "bridge")
	l.ip(s.Bridge, "link", "set", "br0", "up")
	for i, name := range names {
		h := &Host{Name: name, NS: p + name, port: fmt.Sprintf("p%d", i+1),
			Addr:  netip.MustParseAddr(fmt.Sprintf("192.0.2.%d", i+1)),
			Addr6: netip.MustParseAddr(fmt.Sprintf("2001:db8::%d", i+1))}
		l.addNS(h.NS)
		l.ip(s.Bridge, "link", "add", h.port, "type", "veth", "peer", "name", "eth0", "netns", h.NS)
		l.ip(s.Bridge, "link", "set", h.port, "master", "br0")
		l.ip(s.Bridge, "link", "set", h.port, "up")
		l.ip(h.NS, "addr", "add", h.Addr.String()+"/24", "dev", "eth0")
		l.ip(h.NS, "addr", "add", h.Addr6.String()+"/64", "dev", "eth0", "nodad")
		l.ip(h.NS, "link", "set", "eth0", "up")
		s.Hosts = append(s.Hosts, h)
	}
	return s
}

// Sysctl sets a sysctl inside the host's namespace (never the machine's).
func (s *Segment) Sysctl(h *Host, key, value string) {
	s.t.Helper()
	if out, err := exec.Command("ip", "netns", "exec", h.NS, "sysctl", "-qw", key+"="+value).CombinedOutput(); err != nil {
		s.t.Fatalf("sysctl %s=%s in %s: %v: %s", key, value, h.NS, err, out)
	}
}

// Freeze drops (or lets again) every frame to and from the host at the
// switch (an nftables bridge table of its own in the switch's
// namespace); its link stays up. The table comes and goes in one
// netlink batch from this process (no command started), so the fault is
// in place when Freeze returns, within a millisecond or so even on a
// loaded machine (`nft -f` took up to 2.3 s at load 38: a failover
// clock started before it measured the command).
func (s *Segment) Freeze(h *Host, frozen bool) error {
	var rules [][]expr.Any
	for _, key := range []expr.MetaKey{expr.MetaKeyIIFNAME, expr.MetaKeyOIFNAME} {
		rules = append(rules, []expr.Any{
			&expr.Meta{Key: key, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname(h.port)},
			&expr.Verdict{Kind: expr.VerdictDrop},
		})
	}
	if err := s.dropTable("freeze_"+h.port, frozen, rules); err != nil {
		return fmt.Errorf("freeze %s (%v): %w", h.Name, frozen, err)
	}
	return nil
}

// Partition cuts (or heals) the segment between a and b: frames from a's
// port to b's and from b's to a's are dropped at the switch, broadcasts
// included (the bridge checks each copy it floods); both still reach
// every other host. Like Freeze, one netlink batch from this process, in
// place when Partition returns.
func (s *Segment) Partition(a, b *Host, cut bool) error {
	var rules [][]expr.Any
	for _, d := range [][2]*Host{{a, b}, {b, a}} {
		rules = append(rules, []expr.Any{
			&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname(d[0].port)},
			&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 2},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 2, Data: ifname(d[1].port)},
			&expr.Verdict{Kind: expr.VerdictDrop},
		})
	}
	if err := s.dropTable("cut_"+a.port+"_"+b.port, cut, rules); err != nil {
		return fmt.Errorf("partition %s|%s (%v): %w", a.Name, b.Name, cut, err)
	}
	return nil
}

// dropTable adds (on) or deletes the bridge table name in the switch's
// namespace, its forward chain holding rules, in one netlink batch.
func (s *Segment) dropTable(name string, on bool, rules [][]expr.Any) error {
	ns, err := os.Open(Path(s.Bridge))
	if err != nil {
		return err
	}
	defer ns.Close()
	conn, err := nftables.New(nftables.WithNetNSFd(int(ns.Fd())))
	if err != nil {
		return err
	}
	defer conn.CloseLasting()
	table := &nftables.Table{Family: nftables.TableFamilyBridge, Name: name}
	if !on {
		conn.DelTable(table)
		return conn.Flush()
	}
	conn.AddTable(table)
	policy := nftables.ChainPolicyAccept
	chain := conn.AddChain(&nftables.Chain{Name: "forward", Table: table, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &policy})
	for _, r := range rules {
		conn.AddRule(&nftables.Rule{Table: table, Chain: chain, Exprs: r})
	}
	return conn.Flush()
}

// ifname is an interface name as the kernel compares it (IFNAMSIZ bytes,
// NUL padded).
func ifname(n string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, n)
	return b
}

// Keepalived runs the real keepalived (Debian's; make deps) on h with
// the configuration file conf, its pid files in dir named after h, until
// the test ends, and returns its main pid file (a SIGHUP there reloads
// it); it skips the test when keepalived is not installed.
func Keepalived(t testing.TB, h *Host, conf, dir string) (pidFile string) {
	t.Helper()
	bin, err := exec.LookPath("keepalived")
	if err != nil {
		bin = "/usr/sbin/keepalived"
		if _, err := os.Stat(bin); err != nil {
			t.Skip("no keepalived (apt-get install keepalived; make deps)")
		}
	}
	pidFile = filepath.Join(dir, h.Name+".pid")
	var log bytes.Buffer
	cmd := exec.Command("ip", "netns", "exec", h.NS, bin, "-n", "-l", "-G", "-P", "-f", conf,
		"-p", pidFile, "-r", filepath.Join(dir, h.Name+".vrrp.pid"), "-c", filepath.Join(dir, h.Name+".check.pid"))
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("keepalived on %s:\n%s", h.Name, log.String())
		}
	})
	return pidFile
}

// OnEth0 are the names of the hosts that have a on their eth0 (the
// owners of a virtual address, as keepalived or the layer 2 announcer
// put it there).
func OnEth0(hosts []*Host, a netip.Addr) []string {
	var out []string
	for _, h := range hosts {
		b, err := exec.Command("ip", "-n", h.NS, "-br", "addr", "show", "dev", "eth0").CombinedOutput()
		if err == nil && strings.Contains(string(b), " "+a.String()+"/") {
			out = append(out, h.Name)
		}
	}
	return out
}
