package nft

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Health says how nodes are probed. UDP has no standard check, so the
// node is probed instead of the Service: by default kube-proxy's health
// endpoint (:10256/healthz, 200 while kube-proxy is healthy and the node
// is not being deleted or tainted out; see docs/udp.md and KEP-3836).
type Health struct {
	Kind     string // "http", "tcp" or "none"
	Port     uint16
	Path     string // http only
	Interval time.Duration
}

// DefaultHealth is the --udp-health default: kube-proxy's healthz.
const DefaultHealth = "http:10256/healthz"

// Rise and fall: a node leaves after this many failed probes in a row,
// and comes back after this many good ones.
const (
	healthFall = 2
	healthRise = 2
)

// ParseHealth reads --udp-health: http:PORT[/PATH], tcp:PORT or none.
func ParseHealth(s string, interval time.Duration) (Health, error) {
	h := Health{Interval: interval}
	if s == "none" {
		h.Kind = "none"
		return h, nil
	}
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || (kind != "http" && kind != "tcp") {
		return h, fmt.Errorf("--udp-health: want http:PORT[/PATH], tcp:PORT or none, got %q", s)
	}
	port, path, _ := strings.Cut(rest, "/")
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return h, fmt.Errorf("--udp-health: bad port in %q", s)
	}
	if kind == "tcp" && path != "" {
		return h, fmt.Errorf("--udp-health: tcp takes no path: %q", s)
	}
	for _, c := range path {
		if c <= ' ' || c > '~' || c == '?' || c == '#' {
			return h, fmt.Errorf("--udp-health: bad path in %q", s)
		}
	}
	if interval <= 0 {
		return h, fmt.Errorf("--udp-health-interval must be positive")
	}
	h.Kind, h.Port, h.Path = kind, uint16(p), "/"+path
	return h, nil
}

// prober probes each tracked node address every interval and reports a
// change of a node's state (after healthFall or healthRise probes) to
// changed. New addresses start healthy: the node is eligible already.
type prober struct {
	h       Health
	check   func(ctx context.Context, a netip.Addr) bool // one probe
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	changed func(a netip.Addr, down bool)
	client  *http.Client

	mu    sync.Mutex
	nodes map[netip.Addr]*nodeState
}

type nodeState struct {
	down       bool
	fails, oks int
	stop       context.CancelFunc
}

func newProber(h Health, dial func(ctx context.Context, network, addr string) (net.Conn, error), changed func(netip.Addr, bool)) *prober {
	if h.Kind == "none" || h.Kind == "" {
		return nil
	}
	p := &prober{h: h, dial: dial, changed: changed, nodes: map[netip.Addr]*nodeState{}}
	p.client = &http.Client{Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
	p.check = p.probe
	return p
}

// track starts probing addrs that are new and stops probing the others.
func (p *prober) track(ctx context.Context, addrs map[netip.Addr]bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for a, n := range p.nodes {
		if !addrs[a] {
			n.stop()
			delete(p.nodes, a)
		}
	}
	for a := range addrs {
		if p.nodes[a] == nil {
			pctx, cancel := context.WithCancel(ctx)
			p.nodes[a] = &nodeState{stop: cancel}
			go p.loop(pctx, a)
		}
	}
}

// down reports whether a is failing its probe.
func (p *prober) down(a netip.Addr) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.nodes[a]
	return n != nil && n.down
}

func (p *prober) loop(ctx context.Context, a netip.Addr) {
	t := time.NewTicker(p.h.Interval)
	defer t.Stop()
	for {
		ok := p.check(ctx, a)
		if ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		n, flipped, down := p.nodes[a], false, false
		if n != nil {
			if ok {
				n.oks, n.fails = n.oks+1, 0
				flipped = n.down && n.oks >= healthRise
			} else {
				n.fails, n.oks = n.fails+1, 0
				flipped = !n.down && n.fails >= healthFall
			}
			if flipped {
				n.down = !n.down
			}
			down = n.down
		}
		p.mu.Unlock()
		if flipped {
			p.changed(a, down)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *prober) probe(ctx context.Context, a netip.Addr) bool {
	timeout := min(p.h.Interval, 2*time.Second)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hostport := netip.AddrPortFrom(a, p.h.Port).String()
	if p.h.Kind == "tcp" {
		c, err := p.dial(ctx, "tcp", hostport)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hostport+p.h.Path, nil)
	if err != nil {
		return false
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
