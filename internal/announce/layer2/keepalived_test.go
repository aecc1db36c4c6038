package layer2

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// keepalived runs the baseline in the same harness: one keepalived per
// host namespace (Debian's package; make deps), each with its own
// configuration, pid files and log, VRRP on the segment: an instance for
// vip4 and one for vip6 (VRRPv3), every host BACKUP at one priority with
// nopreempt (as our announcer, nothing moves back), its health a
// vrrp_script testing a file (removed: the host is unhealthy).
type keepalived struct {
	advert  string // advert_int, seconds
	version int    // of the IPv4 instance
}

func (k keepalived) String() string {
	return fmt.Sprintf("keepalived 2.2 VRRPv%d, advert %s s", k.version, k.advert)
}

func (k keepalived) config(h *netlab.Host, dir string) string {
	return fmt.Sprintf(`global_defs {
    router_id %[1]s
    enable_script_security
    script_user root
}
vrrp_script health {
    script "/usr/bin/test -f %[2]s/%[1]s.healthy"
    interval 1
    fall 1
    rise 1
}
vrrp_instance v4 {
    state BACKUP
    nopreempt
    version %[3]d
    interface eth0
    virtual_router_id 51
    priority 100
    advert_int %[4]s
    track_script {
        health
    }
    virtual_ipaddress {
        %[5]s/32
    }
}
vrrp_instance v6 {
    state BACKUP
    nopreempt
    version 3
    interface eth0
    virtual_router_id 52
    priority 100
    advert_int %[4]s
    track_script {
        health
    }
    virtual_ipaddress {
        %[6]s/128
    }
}
`, h.Name, dir, k.version, k.advert, vip4, vip6)
}

// newKeepalived runs keepalived on each host; it skips the benchmark
// when keepalived is not installed.
func newKeepalived(t testing.TB, k keepalived) *group {
	t.Helper()
	g := newHosts(t)
	dir := t.TempDir()
	for _, h := range g.lbs {
		conf := filepath.Join(dir, h.Name+".conf")
		if err := os.WriteFile(conf, []byte(k.config(h, dir)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, h.Name+".healthy"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		netlab.Keepalived(t, h, conf, dir)
	}
	g.holders = func(vip netip.Addr) []string { return netlab.OnEth0(g.lbs, vip) }
	g.healthy = func(h *netlab.Host, ok bool) error {
		f := filepath.Join(dir, h.Name+".healthy")
		if ok {
			return os.WriteFile(f, nil, 0o600)
		}
		return os.Remove(f)
	}
	return g
}
