package runtimeapi

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// probeProxied connects to addr (a frontend with accept-proxy) as the
// client src, named in a PROXY protocol v1 header: any address of either
// family, IPv4-mapped and 6to4 ones included, without a network of its
// own. It returns the node's name, or an error when HAProxy refused.
func probeProxied(src netip.Addr, addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	dst := netip.MustParseAddr("127.0.0.1")
	fam := "TCP4"
	if !src.Is4() {
		fam, dst = "TCP6", netip.MustParseAddr("::1")
	}
	if _, err := fmt.Fprintf(c, "PROXY %s %s %s 40000 80\r\n", fam, src, dst); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("read from %s as %s: %w (got %q)", addr, src, err, line)
	}
	return strings.TrimSuffix(line, "\n"), nil
}

// familyWorld is rangesWorld's restricted frontend bound on 127.0.0.1
// and ::1, and a second one with the same ranges behind the PROXY
// protocol on 127.0.0.1.
type familyWorld struct {
	*rangesWorld
	v6      string // the restricted frontend on ::1
	proxied string
	pPort   uint16
}

func newFamilyWorld(t *testing.T) *familyWorld {
	w := &familyWorld{rangesWorld: newRangesWorld(t), pPort: uint16(haproxytest.FreePort(t))}
	w.v6 = fmt.Sprintf("[::1]:%d", w.fePorts[0])
	w.proxied = fmt.Sprintf("127.0.0.1:%d", w.pPort)
	if l, err := net.Listen("tcp", w.v6); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	} else {
		l.Close()
	}
	return w
}

func (w *familyWorld) config(ranges []netip.Prefix) model.Config {
	cfg := w.rangesWorld.config(ranges, 0)
	fe := &cfg.Frontends[0]
	fe.Binds = append(fe.Binds, model.Bind{Addr: netip.MustParseAddr("::1"), Port: uint16(w.fePorts[0])})
	p := *fe
	p.Name, p.Binds, p.AcceptProxy = "fe_p", []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: w.pPort}}, true
	cfg.Frontends = append(cfg.Frontends, p)
	return cfg
}

// expectProxied is expectServed for clients named in a PROXY header.
func expectProxied(t *testing.T, addr string, served map[string]bool) {
	t.Helper()
	for src, want := range served {
		name, err := probeProxied(netip.MustParseAddr(src), addr)
		if got := err == nil && strings.HasPrefix(name, "node-"); got != want {
			t.Errorf("client %s (PROXY header) to %s: served %v (%q, %v), want %v", src, addr, got, name, err, want)
		}
	}
}

// A client is checked against the source ranges of its own family only:
// ["127.0.0.2/32", "::/0"] lets in one IPv4 client and every IPv6 one
// (HAProxy alone would try an IPv4 client that misses 127.0.0.2/32
// against ::/0 as ::ffff:127.0.0.x and let it in), an IPv4-mapped client
// is an IPv4 one, and a 6to4 client (2002:7f00:3::1, which HAProxy reads
// as 127.0.0.3 when it misses the IPv6 ranges) is an IPv6 one. Ranges
// moving between the families change no structure: no reload.
func TestSourceRangesPerFamily(t *testing.T) {
	l := startLab(t)
	w := newFamilyWorld(t)
	ctx := context.Background()

	res, err := l.d.Apply(ctx, w.config(pfxs("127.0.0.2/32", "::/0")))
	if err != nil || !res.Reloaded {
		t.Fatalf("first apply: reloaded %v, %v", res.Reloaded, err)
	}
	expectServed(t, w.restricted, map[string]bool{"127.0.0.2": true, "127.0.0.3": false, "127.0.0.4": false})
	expectServed(t, w.v6, map[string]bool{"::1": true})
	expectProxied(t, w.proxied, map[string]bool{
		"127.0.0.2": true, "127.0.0.3": false, "198.51.100.7": false,
		"::ffff:127.0.0.2": true, "::ffff:127.0.0.3": false, "::ffff:198.51.100.7": false,
		"2001:db8::7": true, "2002:7f00:3::1": true, "::1": true,
	})
	expectACLFiles(t, l.d.opts.Render.ACLDir, "fe_a_ipv4.acl: 127.0.0.2/32\n", "fe_a_ipv6.acl: ::/0\n")

	// IPv4 ranges only: no IPv6 client, a 6to4 one neither; the Runtime
	// API, no reload.
	res, err = l.d.Apply(ctx, w.config(pfxs("127.0.0.0/8")))
	if err != nil || res.Reloaded {
		t.Fatalf("IPv4 only: reloaded %v (%v), %v", res.Reloaded, res.Reasons, err)
	}
	expectServed(t, w.restricted, map[string]bool{"127.0.0.2": true, "127.0.0.3": true})
	expectServed(t, w.v6, map[string]bool{"::1": false})
	expectProxied(t, w.proxied, map[string]bool{
		"127.0.0.3": true, "::ffff:127.0.0.3": true, "::ffff:198.51.100.7": false,
		"2002:7f00:3::1": false, "::127.0.0.3": false, "::1": false, "2001:db8::7": false,
	})

	// IPv6 ranges only: no IPv4 client, mapped ones neither.
	res, err = l.d.Apply(ctx, w.config(pfxs("::1/128", "2002::/16")))
	if err != nil || res.Reloaded {
		t.Fatalf("IPv6 only: reloaded %v (%v), %v", res.Reloaded, res.Reasons, err)
	}
	expectACLFiles(t, l.d.opts.Render.ACLDir, "fe_a_ipv4.acl: ::/128\n", "fe_a_ipv6.acl: ::1/128\n2002::/16\n")
	expectServed(t, w.restricted, map[string]bool{"127.0.0.2": false, "127.0.0.3": false})
	expectServed(t, w.v6, map[string]bool{"::1": true})
	expectProxied(t, w.proxied, map[string]bool{
		"127.0.0.3": false, "::ffff:127.0.0.3": false, "2002:7f00:3::1": true, "::1": true, "2001:db8::7": false,
	})
}

// expectACLFiles checks the files of fe_a in dir, each "NAME: CONTENT".
func expectACLFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	if dir == "" {
		t.Fatal("no ACL directory")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "fe_a*"))
	var bodies []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		bodies = append(bodies, filepath.Base(f)+": "+string(b))
	}
	if !slices.Equal(bodies, want) {
		t.Errorf("ACL files %q, want %q", bodies, want)
	}
}
