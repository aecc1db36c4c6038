package runtimeapi

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A reload that `haproxy -c` cannot foresee fails (a frontend on an address
// this host does not have, 192.0.2.1 of TEST-NET-1: the bind fails, nothing
// is sent): the driver reports ErrReloadFailed, keeps the running
// configuration, and on a master that answers the reload itself (2.7+) its
// error carries HAProxy's own reason from the startup logs; the driver knows
// the master's version from the reload.
//
// The reason is there on every version, with HAProxy's `quiet` rendered
// (no [ALERT] on the master's output) or not: a 2.6 master answers
// nothing, and the driver then names the binds `haproxy -c` cannot try
// (explain.go).
func TestFailedReloadSaysWhy(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		t.Run("quiet="+strconv.FormatBool(quiet), func(t *testing.T) {
			testFailedReloadSaysWhy(t, quiet)
		})
	}
}

func testFailedReloadSaysWhy(t *testing.T, quiet bool) {
	lb := startLabWith(t, func(o *Options) { o.Render.Quiet = quiet })
	d := lb.d
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fe := func(name, addr string, port int) model.Frontend {
		return model.Frontend{Name: "fe_" + name, Backend: "be_" + name,
			Binds: []model.Bind{{Addr: netip.MustParseAddr(addr), Port: uint16(port)}}}
	}
	be := func(name string) *model.Backend {
		return &model.Backend{Name: "be_" + name, Balance: "roundrobin",
			Servers: []model.Server{{Addr: netip.MustParseAddr("127.0.0.1"), Port: 1}}}
	}
	good := model.Config{Frontends: []model.Frontend{fe("a", "127.0.0.1", haproxytest.FreePort(t))}, Backends: []*model.Backend{be("a")}}
	if res, err := d.Apply(ctx, good); err != nil || !res.Reloaded {
		t.Fatalf("first reload: reloaded %v, %v", res.Reloaded, err)
	}
	v := d.version
	if !v.Known() {
		t.Fatal("the driver did not learn the master's version from the reload")
	}

	before, err := os.ReadFile(d.opts.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	port := haproxytest.FreePort(t)
	bad := model.Config{Frontends: []model.Frontend{good.Frontends[0], fe("b", "192.0.2.1", port)}, Backends: []*model.Backend{good.Backends[0], be("b")}}
	_, err = d.Apply(ctx, bad)
	if !errors.Is(err, haproxy.ErrReloadFailed) {
		t.Fatalf("reload onto an address the host lacks, on %s: %v, want ErrReloadFailed", v, err)
	}
	t.Logf("%s: %v", v, err)
	// HAProxy's alert (2.7+) or the driver (explain.go) names the
	// frontend and the address it could not bind.
	for _, want := range []string{"fe_b", strconv.Itoa(port)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: the error does not carry the reason (%q): %v", v, want, err)
		}
	}
	// The old worker still serves the last good configuration, and the
	// file on disk is that configuration again (no `haproxy -c` runs
	// before a reload: the master's own parse is the one check).
	assertServing(t, ctx, lb.p.StatsSocket, good)
	if after, err := os.ReadFile(d.opts.ConfigPath); err != nil || !bytes.Equal(after, before) {
		t.Errorf("after the failed reload the config file is not the running one again (%v)", err)
	}
}

// After a reload only the workers the master listed count as the new
// configuration's: with the same structure hash, a previous worker still
// answering on the stats socket (2.7+ confirms before it stops listening)
// must not be taken for the new one.
func TestNewWorker(t *testing.T) {
	for _, tc := range []struct {
		pid     string
		workers []int
		want    bool
	}{
		{"12675", []int{12675}, true},
		{"12670", []int{12675}, false},
		{"12670", nil, true}, // the master's list could not be read: the hash decides
		{"", []int{12675}, false},
		{"x", []int{12675}, false},
	} {
		if got := newWorker(tc.pid, tc.workers); got != tc.want {
			t.Errorf("newWorker(%q, %v) = %v, want %v", tc.pid, tc.workers, got, tc.want)
		}
	}
}
