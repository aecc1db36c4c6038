package runtimeapi

import (
	"bufio"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// streamBackend answers a WebSocket upgrade with 101 and echoes what
// follows, /stream with a response that never ends (a line every 20 ms
// until the client goes), and anything else with "ok".
func streamBackend(t *testing.T) netip.AddrPort {
	return serveHTTP(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			conn, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			// HAProxy checks the accept key (RFC 6455, 4.2.2).
			sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
			_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
				"Sec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n")
			_ = rw.Flush()
			_, _ = io.Copy(conn, rw)
			return
		}
		if r.URL.Path != "/stream" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		rc := http.NewResponseController(w)
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "line %d\n", i); err != nil || rc.Flush() != nil {
				return
			}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond): // the stream's pace
			}
		}
	})
}

// webSocket opens a WebSocket through addr for host and returns its
// connection and reader, after the 101.
func webSocket(t *testing.T, addr, host string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", host)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(conn)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, " 101 ") {
		t.Fatalf("WebSocket upgrade through %s: %q %v", addr, status, err)
	}
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if l == "\r\n" {
			return conn, br
		}
	}
}

// echo reports whether the WebSocket still carries a message both ways.
func echo(conn net.Conn, br *bufio.Reader, msg string) error {
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, msg+"\n"); err != nil {
		return err
	}
	got, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	if got != msg+"\n" {
		return fmt.Errorf("echoed %q, want %q", got, msg)
	}
	return nil
}

// h2Stream starts a long response over HTTP/2 (clear text, prior
// knowledge) through addr for host, and counts its lines as they come;
// done is closed when the stream ends, with its error in *end.
func h2Stream(t *testing.T, addr, host string) (lines *atomic.Int64, done chan struct{}, end *error) {
	t.Helper()
	tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, a string, _ *tls.Config) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, a)
	}}
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("HTTP/2 stream through %s: %v", addr, err)
	}
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Fatalf("HTTP/2 stream: %s %s", resp.Proto, resp.Status)
	}
	lines, done, end = &atomic.Int64{}, make(chan struct{}), new(error)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines.Add(1)
		}
		*end = fmt.Errorf("stream ended after %d lines: %v", lines.Load(), sc.Err())
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	return lines, done, end
}

// A WebSocket and a long HTTP/2 response, both through an HTTP frontend
// of a real HAProxy, stay up while 20 route changes go through the maps
// (no reload), and while another listener is added (a new frontend: a
// reload, the old worker keeping the connections it has).
func TestStreamsSurviveRouteChangesAndNewListener(t *testing.T) {
	l := startMapLab(t)
	d := l.d
	ctx := context.Background()
	be := streamBackend(t)
	port := uint16(haproxytest.FreePort(t))
	addr := "127.0.0.1:" + strconv.Itoa(int(port))
	cfgOf := func(gen int) model.Config {
		return httpConfig(port, routeTable(50, "/app"+strconv.Itoa(gen), int32(90-gen%2*80)), be, be)
	}
	if _, err := d.Apply(ctx, cfgOf(0)); err != nil {
		t.Fatal(err)
	}
	conn, br := webSocket(t, addr, "r1.example.com")
	lines, done, end := h2Stream(t, addr, "r2.example.com")
	// alive fails t unless both carry traffic now: a message echoed, and
	// new lines of the stream within 5 s.
	alive := func(step string) {
		t.Helper()
		if err := echo(conn, br, "msg "+step); err != nil {
			t.Fatalf("%s: the WebSocket is gone: %v", step, err)
		}
		n0, deadline := lines.Load(), time.Now().Add(5*time.Second)
		for lines.Load() < n0+3 {
			select {
			case <-done:
				t.Fatalf("%s: the HTTP/2 stream is gone: %v", step, *end)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the HTTP/2 stream gave %d lines in 5 s", step, lines.Load()-n0)
			}
			time.Sleep(10 * time.Millisecond) // poll interval
		}
	}
	alive("before")
	reloads := l.reloads(ctx, t)
	for gen := 1; gen <= 20; gen++ {
		if _, err := d.Apply(ctx, cfgOf(gen)); err != nil {
			t.Fatal(err)
		}
		alive("route change " + strconv.Itoa(gen))
	}
	if got := l.reloads(ctx, t); got != reloads {
		t.Fatalf("%d reloads for route changes, want 0", got-reloads)
	}

	// Another listener: a frontend of its own, which still reloads.
	cfg := cfgOf(21)
	other := uint16(haproxytest.FreePort(t))
	f := cfg.Frontends[0]
	f.Name, f.Binds = "gw_apps_gw2_80", []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: other}}
	cfg.Frontends = append(cfg.Frontends, f)
	res, err := d.Apply(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Reasons) == 0 {
		t.Logf("the new listener took no reload")
	}
	if status, _ := httpGet(t, "127.0.0.1:"+strconv.Itoa(int(other)), "r3.example.com", "/"); status != 200 {
		t.Fatalf("the new listener answers %d", status)
	}
	alive("after the new listener")
	if got := l.reloads(ctx, t); got == reloads {
		t.Logf("no reload for the new listener")
	}
}
