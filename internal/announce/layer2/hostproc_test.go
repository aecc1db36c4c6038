package layer2

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/proc"
)

// errNoAnswer: the host's process answered a request with an error.
var errNoAnswer = errors.New("the host's announcer did not answer")

// hostProc is one host's announcer process and the client that asks it.
type hostProc struct {
	p      *proc.Process
	client *http.Client
}

// newGroup runs our announcer on each host, each a process of its own in
// the host's namespace (the test binary again: hostmain_test.go), each
// told wanted and extra. cfg's OnMove is told the moves every host
// hears, and cfg's Logger each host's late steps (lateMessage).
func newGroup(t testing.TB, cfg Config, extra ...netip.Addr) *group {
	t.Helper()
	return startGroup(t, newHosts(t), cfg, nil, extra...)
}

// startGroup runs our announcer on each of g's hosts (newGroup); with
// stats, each host's behind the real health gate asking the HAProxy
// whose admin socket stats names (newGatedGroup).
func startGroup(t testing.TB, g *group, cfg Config, stats func(h *netlab.Host) string, extra ...netip.Addr) *group {
	t.Helper()
	want := wanted
	want.Addrs = append(slices.Clone(want.Addrs), extra...)
	// a short directory: Unix socket paths are at most 107 bytes
	dir, err := os.MkdirTemp("", "l2-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	events := filepath.Join(dir, "events")
	ln, err := net.Listen("unix", events)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go hearEvents(ln, cfg, g.movedAt)
	var mu sync.Mutex
	procs := map[string]*hostProc{}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		var stopping sync.WaitGroup
		for name, hp := range procs {
			stopping.Go(func() {
				hp.p.Stop(10 * time.Second)
				if t.Failed() {
					t.Logf("announcer %s:\n%s", name, hp.p.Tail(30))
				}
			})
		}
		stopping.Wait()
	})
	start := func(h *netlab.Host, healthy bool) error {
		c := cfg
		c.ID, c.Interface, c.Key = h.Name, "eth0", []byte("the group's key")
		if c.KeptFile != "" { // a directory: one file per host
			c.KeptFile = filepath.Join(c.KeptFile, h.Name+".json")
		}
		c.Listen = netip.AddrPortFrom(netip.IPv4Unspecified(), DefaultPort)
		for _, p := range g.lbs {
			if p != h {
				c.Peers = append(c.Peers, netip.AddrPortFrom(p.Addr, DefaultPort))
			}
		}
		w := want
		w.Healthy = healthy
		hf := hostFile{Config: c, Want: w, Socket: filepath.Join(dir, h.Name+".sock"), Events: events,
			Log: testing.Verbose() && os.Getenv("HKS_ANNOUNCE_LOG") != ""}
		if stats != nil {
			hf.Stats = stats(h)
		}
		_ = os.Remove(hf.Socket) // a killed run's
		file := filepath.Join(dir, h.Name+".host")
		b, err := json.Marshal(hf)
		if err == nil {
			err = os.WriteFile(file, b, 0o600)
		}
		if err != nil {
			return err
		}
		p, err := proc.Start("announcer "+h.Name, filepath.Join(dir, h.Name+".log"), "ip",
			proc.Options{Env: append(os.Environ(), hostEnv+"="+file), Append: true},
			"netns", "exec", h.NS, os.Args[0], "-test.run=^$")
		if err != nil {
			return err
		}
		hp := &hostProc{p: p, client: &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", hf.Socket)
			}}}}
		mu.Lock()
		procs[h.Name] = hp
		mu.Unlock()
		return proc.WaitFor(10*time.Second, 20*time.Millisecond, p, func() error {
			var held []netip.Addr
			return hp.get(time.Second, "/holds", &held)
		})
	}
	for _, h := range g.lbs {
		if err := start(h, true); err != nil {
			t.Fatal(err)
		}
	}
	get := func(name string) *hostProc { mu.Lock(); defer mu.Unlock(); return procs[name] }
	g.holds = func(name string) ([]netip.Addr, error) {
		var held []netip.Addr
		if err := get(name).get(5*time.Second, "/holds", &held); err != nil {
			return nil, fmt.Errorf("%s did not say what it holds within 5 s: %w", name, err)
		}
		return held, nil
	}
	g.holders = func(vip netip.Addr) []string {
		var out []string
		for _, h := range g.lbs {
			var held []netip.Addr
			if err := get(h.Name).get(time.Second, "/holds", &held); err == nil && slices.Contains(held, vip) {
				out = append(out, h.Name)
			}
		}
		return out
	}
	g.view = func(name string) announce.Holders {
		var hs announce.Holders
		_ = get(name).get(time.Second, "/holders", &hs)
		return hs
	}
	g.healthy = func(h *netlab.Host, ok bool) error {
		w := want
		w.Healthy = ok
		return get(h.Name).put(5*time.Second, "/want", w)
	}
	g.pids = func() []int {
		var out []int
		for _, h := range g.lbs {
			out = append(out, get(h.Name).p.Pid())
		}
		return out
	}
	// the agent dies (SIGKILL: its addresses stay until their lifetime
	// lapses) and starts again
	g.kill = func(h *netlab.Host, on bool) error {
		p := get(h.Name).p
		if on {
			return p.Cmd.Process.Signal(syscall.SIGKILL)
		}
		// the dead agent's socket closed before a new one binds the port
		select {
		case <-p.Done():
		case <-time.After(5 * time.Second):
			return fmt.Errorf("the announcer of %s did not end", h.Name)
		}
		return start(h, true)
	}
	g.restart = func(h *netlab.Host, unhealthyFor time.Duration) error {
		p := get(h.Name).p
		p.Stop(10 * time.Second)
		if !p.Exited() {
			return fmt.Errorf("the announcer of %s did not stop", h.Name)
		}
		if err := start(h, false); err != nil {
			return err
		}
		// its health gate passes later (the new controller's caches
		// syncing): a delay simulated, not a wait
		time.AfterFunc(unhealthyFor, func() { _ = g.healthy(h, true) })
		return nil
	}
	return g
}

// hearEvents reads every host's events until ln closes: the moves to
// cfg.OnMove, the late steps to cfg.Logger.
func hearEvents(ln net.Listener, cfg Config, movedAt func(time.Time, announce.Move)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				var e hostEvent
				if json.Unmarshal(sc.Bytes(), &e) != nil {
					continue
				}
				if e.Move != nil && cfg.OnMove != nil {
					cfg.OnMove(*e.Move)
				}
				if e.Move != nil && movedAt != nil {
					movedAt(e.At, *e.Move)
				}
				if e.Late > 0 && cfg.Logger != nil {
					cfg.Logger.Warn(lateMessage, "took", e.Late, "host", e.Host)
				}
			}
		}()
	}
}

// get asks the host's process for path, the answer decoded into v.
func (hp *hostProc) get(within time.Duration, path string, v any) error {
	return hp.do(within, http.MethodGet, path, nil, v)
}

// put sends v to the host's process at path.
func (hp *hostProc) put(within time.Duration, path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return hp.do(within, http.MethodPut, path, b, nil)
}

func (hp *hostProc) do(within time.Duration, method, path string, body []byte, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://host"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := hp.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %w", method, path, resp.Status, errNoAnswer)
	}
	if v == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// moveTimes counts the moves from a holder (not an address's first
// owner) by when the hosts made them (hostEvent.At). A move made before
// a stall but heard after it is not the stall's: the hosts' event
// streams lag on a loaded machine (CI heard 6 moves at the first stop
// of TestStalledProcessMovesNothing, none of the three hosts having
// logged a wake from it).
type moveTimes struct {
	mu sync.Mutex
	at []time.Time
}

func (m *moveTimes) add(at time.Time, mv announce.Move) {
	if len(mv.From) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.at = append(m.at, at)
}

// since is how many moves the hosts made at or after t.
func (m *moveTimes) since(t time.Time) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, at := range m.at {
		if !at.Before(t) {
			n++
		}
	}
	return n
}

// timedGroup is newGroup with the hosts' moves counted by when they
// made them.
func timedGroup(t *testing.T, cfg Config, extra ...netip.Addr) (*group, *moveTimes) {
	t.Helper()
	moves := &moveTimes{}
	g := newHosts(t)
	g.movedAt = moves.add
	return startGroup(t, g, cfg, nil, extra...), moves
}
