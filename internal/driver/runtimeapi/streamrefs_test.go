package runtimeapi

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func TestStreamTargets(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		want         []string
	}{
		{"2.6.12, a request waiting for its retry, and the CLI's own stream",
			"0x55c48169da50: proto=tcpv4 src=127.0.0.1:47254 fe=f be=b srv=s1 ts=00 epoch=0 age=2s calls=4 rate=2 cpu=0 lat=0 rq[f=4dc00000h,i=16302,an=8000h,rx=,wx=,ax=] scb=[3,1h,fd=-1] exp=0s rc=2 c_exp=0s\n" +
				"0x55c4817bdd80: proto=unix_stream src=unix:1 fe=GLOBAL be=<NONE> srv=<none> ts=00 epoch=0 age=0s calls=1\n",
			[]string{"b/s1"}},
		{"a stream not assigned yet", "0x1: proto=tcpv6 src=[::1]:1 fe=_http_listeners be=_pool_5 srv=<none> ts=00\n", nil},
		{"two backends, one server twice",
			"0x1: proto=tcpv4 src=a fe=f be=_pool_5 srv=r1 ts=00\n0x2: proto=tcpv4 src=b fe=f be=_pool_5 srv=r1 ts=00\n0x3: proto=tcpv4 src=c fe=f be=gw_x srv=s12 ts=00\n",
			[]string{"_pool_5/r1", "gw_x/s12"}},
		{"no stream", "", nil},
		{"not show sess", "Unknown command.\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for k := range streamTargets(tc.answer) {
				got = append(got, k)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDeleteWaitsForRetryingStream: a request whose connection failed
// waits for its retry naming its server, with no connection in use, and
// HAProxy accepts `del server` of that server in maintenance (a
// use-after-free that aborted 2.6.12: streamrefs.go; 3.0+ refuses). The driver leaves
// the server while the stream names it, and deletes it once the stream
// has ended; the worker then still answers, with no reload.
func TestDeleteWaitsForRetryingStream(t *testing.T) {
	l := startMapLab(t)
	ctx := context.Background()
	port := uint16(haproxytest.FreePort(t))
	closed := uint16(haproxytest.FreePort(t)) // nothing listens: every connection refused
	cfg := tlsBackendConfig(port, &model.Backend{Name: "be_a", Service: "apps/a", Balance: "roundrobin", HTTP: true,
		RetryOn: "conn-failure", Retries: 8, // a second between tries: the stream lives ~8 s
		Servers: []model.Server{{Addr: netip.MustParseAddr("127.0.0.1"), Port: closed}}})
	if _, err := applyUntilDone(ctx, l.d, cfg); err != nil {
		t.Fatal(err)
	}
	base := l.reloads(ctx, t)
	srv := "be_a/" + model.SlotName(0)

	done := make(chan int, 1)
	go func() {
		c := &http.Client{Timeout: 30 * time.Second}
		resp, err := c.Get("http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))) + "/")
		if err != nil {
			done <- -1
			return
		}
		_ = resp.Body.Close()
		done <- resp.StatusCode
	}()
	named := func() bool {
		t.Helper()
		ans, err := l.d.rt.ExecChecked(ctx, []string{"show sess"})
		if err != nil {
			t.Fatal(err)
		}
		return streamTargets(ans[0])[srv]
	}
	for end := time.Now().Add(5 * time.Second); !named(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no stream named %s within 5s", srv)
		}
	}
	if _, err := l.d.rt.ExecChecked(ctx, []string{"set server " + srv + " state maint"}); err != nil {
		t.Fatal(err)
	}
	// What HAProxy reports of the server: nothing in use on 2.6.12 and
	// 3.0.11 (which would delete it), one on 3.4.7 (which refuses).
	ans, err := l.d.rt.ExecChecked(ctx, []string{"show servers conn be_a"})
	if err != nil {
		t.Fatal(err)
	}
	used, _ := serverConns(ans[0], srv)
	t.Logf("%s in maintenance, a stream naming it: %d connections in use", srv, used)
	var res driver.Result
	left, err := l.d.deleteIdle(ctx, []string{srv}, time.Now().Add(time.Minute), &res)
	if err != nil || !slices.Equal(left, []string{srv}) {
		t.Fatalf("deleteIdle while a stream names %s: left %v, %v; want it left", srv, left, err)
	}
	if !named() {
		t.Fatalf("the stream ended before the check: the test proves nothing")
	}
	var code int
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the request never ended")
	}
	if code != http.StatusServiceUnavailable {
		t.Errorf("the retrying request was answered %d, want 503 (its server refuses)", code)
	}
	for end := time.Now().Add(10 * time.Second); len(left) > 0; time.Sleep(50 * time.Millisecond) {
		if left, err = l.d.deleteIdle(ctx, left, time.Now().Add(time.Minute), &res); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(end) {
			t.Fatalf("%s not deleted within 10s of its stream's end", srv)
		}
	}
	ans, err = l.d.rt.ExecChecked(ctx, []string{"show servers state be_a"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ans[0], " "+model.SlotName(0)+" ") {
		t.Errorf("%s still listed after its deletion:\n%s", srv, ans[0])
	}
	if n := l.reloads(ctx, t); n != base {
		t.Errorf("%d reloads, want 0", n-base)
	}
}
