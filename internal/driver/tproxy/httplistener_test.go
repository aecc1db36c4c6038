package tproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// httpAnswering is the port of an HTTP server on 127.0.0.1 in ns that
// answers every request with name as its body.
func httpAnswering(t testing.TB, ns, name string) uint16 {
	t.Helper()
	return netlab.Serve(t, ns, "127.0.0.1:0", func(c net.Conn) {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil || line == "\r\n" {
				break
			}
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(name))+"\r\nConnection: close\r\n\r\n"+name)
	}).Port()
}

// askHTTP sends one GET for host and path to dst from ns and returns the
// answer's status line and body; "" with an error when refused.
func askHTTP(ns string, dst netip.AddrPort, host, path string) (status, body string, err error) {
	c, err := netlab.DialTCP(ns, netip.Addr{}, dst)
	if err != nil {
		return "", "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n"); err != nil {
		return "", "", err
	}
	all, err := io.ReadAll(c)
	if len(all) == 0 {
		return "", "", err
	}
	head, b, _ := strings.Cut(string(all), "\r\n\r\n")
	status, _, _ = strings.Cut(head, "\r\n")
	return status, b, nil
}

// httpGateway is a plain HTTP Gateway listener on binds: each host's
// rules send a path prefix (or "/x" exactly) to a backend.
func httpGateway(name string, binds []model.Bind, hosts map[string][][2]string) model.Frontend {
	h := &model.HTTP{Port: binds[0].Port}
	for host, rules := range hosts {
		hh := model.HTTPHost{Name: host}
		for _, r := range rules {
			pt, path := model.PathPrefix, r[0]
			if p, ok := strings.CutPrefix(path, "="); ok {
				pt, path = model.PathExact, p
			}
			hh.Rules = append(hh.Rules, model.HTTPRule{PathType: pt, Path: path, Action: len(h.Actions)})
			h.Actions = append(h.Actions, model.HTTPAction{Backends: []model.WeightedBackend{{Name: r[1], Weight: 1}}})
		}
		h.Hosts = append(h.Hosts, hh)
	}
	return model.Frontend{Name: name, Service: "default/" + name, Binds: binds, HTTP: model.Shaped(h)}
}

// TestHTTPListenerNewGateway: plain HTTP Gateway listeners behind the
// fixed HTTP listener are served by host and path from clients of both
// families and from the load balancer itself; a second Gateway on a new
// address and port, whose host is the first's too, is served by its own
// rules with no reload, the first still served by its; a key of neither
// is refused, and a TCP Service beside them keeps the TCP listener.
func TestHTTPListenerNewGateway(t *testing.T) {
	l := startDPOpts(t, render.ListenersTProxy, spares.Policy{}, true)
	port := map[string]uint16{}
	var backends []*model.Backend
	for _, name := range []string{"a", "b"} {
		port[name] = httpAnswering(t, l.lab.LB, name)
		backends = append(backends, &model.Backend{Name: "gwh_" + name, Balance: "roundrobin", HTTP: true,
			Servers: []model.Server{{Addr: netip.MustParseAddr("127.0.0.1"), Port: port[name]}}})
	}
	feC, beC := l.svc("c", bind(vipA, 443))
	one := httpGateway("gw_default_one_80", []model.Bind{bind(vipA, 80), bind(vipA6, 80)}, map[string][][2]string{
		"a.example.com": {{"/", "gwh_a"}}, model.AnyHost: {{"/", "gwh_b"}}})
	cfg := model.Config{Frontends: []model.Frontend{feC, one}, Backends: append(backends, beC, &model.Backend{Name: model.RejectBackend, Balance: "roundrobin"})}
	sortFronts(cfg.Frontends)
	l.apply(t, cfg)

	ap := netip.AddrPortFrom
	type req struct {
		dst        netip.AddrPort
		host, path string
	}
	check := func(cases map[req]string, ns string) {
		t.Helper()
		for r, want := range cases {
			err := netlab.Eventually(t.Context(), 5*time.Second, func() error {
				status, body, err := askHTTP(ns, r.dst, r.host, r.path)
				got := body
				if want == "" {
					if err == nil && status != "" {
						return fmt.Errorf("%v answered %q %q, want refused", r, status, body)
					}
					return nil
				}
				if !strings.HasPrefix(want, "HTTP/") && !strings.Contains(status, " 200 ") {
					return fmt.Errorf("%v: %q %q (%v), want %q", r, status, body, err, want)
				}
				if strings.HasPrefix(want, "HTTP/") {
					got = status
				}
				if got != want {
					return fmt.Errorf("%v: got %q (%v), want %q", r, got, err, want)
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}
	}
	first := map[req]string{
		{ap(vipA, 80), "a.example.com", "/"}:   "a",
		{ap(vipA6, 80), "a.example.com", "/"}:  "a",
		{ap(vipA, 80), "other.example", "/"}:   "b",
		{ap(vipB, 8080), "a.example.com", "/"}: "",
	}
	check(first, l.lab.Client)
	check(first, l.lab.LB)
	if got, err := ask(l.lab.Client, netip.Addr{}, ap(vipA, 443)); got != "c" {
		t.Errorf("the TCP Service beside: %q (%v), want c", got, err)
	}

	before := l.reloads(t)
	two := httpGateway("gw_default_two_8080", []model.Bind{bind(vipB, 8080)}, map[string][][2]string{
		"a.example.com": {{"=/x", "gwh_a"}, {"/", "gwh_b"}}}) // Exact first: the rules are in precedence order
	more := cfg
	more.Frontends = append([]model.Frontend{two}, cfg.Frontends...)
	sortFronts(more.Frontends)
	l.apply(t, more)
	both := map[req]string{
		{ap(vipB, 8080), "a.example.com", "/"}:  "b",
		{ap(vipB, 8080), "a.example.com", "/x"}: "a",
		{ap(vipB, 8080), "other.example", "/"}:  "HTTP/1.1 404 Not Found",
		{ap(vipA, 80), "a.example.com", "/x"}:   "a",
		{ap(vipA, 80), "a.example.com", "/"}:    "a",
		{ap(vipA, 80), "other.example", "/"}:    "b",
		{ap(vipB, 80), "a.example.com", "/"}:    "",
	}
	check(both, l.lab.Client)
	if after := l.reloads(t); after != before {
		t.Errorf("the second Gateway cost %d reloads, want 0", after-before)
	}

	// And gone again: its key refused, no reload.
	l.apply(t, cfg)
	check(map[req]string{{ap(vipB, 8080), "a.example.com", "/"}: "", {ap(vipA, 80), "a.example.com", "/"}: "a"}, l.lab.Client)
	if after := l.reloads(t); after != before {
		t.Errorf("the second Gateway's removal cost %d reloads, want 0", after-before)
	}
}

// sortFronts sorts fs by name, as desired gives them.
func sortFronts(fs []model.Frontend) {
	slices.SortFunc(fs, func(a, b model.Frontend) int { return strings.Compare(a.Name, b.Name) })
}
