package dataplanetest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"
)

// Object is a configuration object, decoded JSON.
type Object = map[string]any

// list is an ordered set of named objects (servers, binds, sections keep
// the order they were created in, as haproxy.cfg does).
type list struct {
	names []string
	m     map[string]Object
}

func newList() *list { return &list{m: map[string]Object{}} }

func (l *list) get(name string) (Object, bool) { o, ok := l.m[name]; return o, ok }

func (l *list) len() int { return len(l.names) }

func (l *list) put(name string, o Object) {
	if _, ok := l.m[name]; !ok {
		l.names = append(l.names, name)
	}
	l.m[name] = o
}

func (l *list) del(name string) bool {
	if _, ok := l.m[name]; !ok {
		return false
	}
	delete(l.m, name)
	l.names = slices.DeleteFunc(l.names, func(n string) bool { return n == name })
	return true
}

func (l *list) all() []Object {
	out := make([]Object, 0, len(l.names))
	for _, n := range l.names {
		out = append(out, l.m[n])
	}
	return out
}

// clone copies the list. Stored objects are never changed in place (a
// write replaces them), so the copies share them.
func (l *list) clone() *list {
	return &list{names: slices.Clone(l.names), m: maps.Clone(l.m)}
}

// config is the whole configuration the API manages (what it writes to
// haproxy.cfg): sections and their children.
type config struct {
	frontends *list
	binds     map[string]*list // frontend name → binds
	backends  *list
	servers   map[string]*list    // backend name → servers
	templates map[string][]Object // backend name → server templates (read only here)
}

func newConfig() *config {
	return &config{frontends: newList(), binds: map[string]*list{}, backends: newList(), servers: map[string]*list{}, templates: map[string][]Object{}}
}

func (c *config) clone() *config {
	// Lists are shared: a change clones the list it makes (see mutation).
	return &config{frontends: c.frontends, binds: maps.Clone(c.binds), backends: c.backends,
		servers: maps.Clone(c.servers), templates: maps.Clone(c.templates)}
}

func cloneObject(o Object) Object {
	b, _ := json.Marshal(o)
	var c Object
	_ = json.Unmarshal(b, &c)
	return c
}

// check is what `haproxy -c` would refuse in the parts of a configuration
// this server models: a frontend naming a backend that does not exist, a
// server address that is not an IP address (nothing resolves names here),
// a server template without a valid address, a backend using track on a
// server that does not exist.
func (c *config) check() error {
	for _, name := range c.frontends.names {
		fe := c.frontends.m[name]
		if be, ok := fe["default_backend"].(string); ok && be != "" {
			if _, ok := c.backends.get(be); !ok {
				return fmt.Errorf("Proxy '%s': unable to find required default_backend: '%s'.", name, be)
			}
		}
	}
	for _, name := range c.backends.names {
		for _, s := range c.servers[name].all() {
			if err := checkServer(s); err != nil {
				return err
			}
			if err := c.checkTrack(name, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// params is a server's settings with its backend's default-server under
// them.
func (c *config) params(backend string, s Object) map[string]any {
	out := map[string]any{}
	if be, ok := c.backends.get(backend); ok {
		if ds, ok := be["default_server"].(map[string]any); ok {
			maps.Copy(out, ds)
		}
	}
	maps.Copy(out, s)
	return out
}

// checkTrack is what HAProxy 2.6 refuses of a server that tracks another
// (measured, the messages as it prints them): a tracked server that does
// not exist, checks and tracking together, a tracked server with neither
// a check nor an agent (or a track of its own).
func (c *config) checkTrack(backend string, s Object) error {
	p := c.params(backend, s)
	tr, ok := p["track"].(string)
	if !ok {
		return nil
	}
	who := fmt.Sprintf("'server %s/%v'", backend, s["name"])
	if p["check"] == "enabled" {
		return fmt.Errorf("%s unable to enable checks and tracking at the same time!", who)
	}
	tb, ts, found := strings.Cut(tr, "/")
	if !found {
		tb, ts = backend, tr
	}
	if _, ok := c.backends.get(tb); !ok {
		return fmt.Errorf("%s unable to find required proxy '%s' for tracking.", who, tb)
	}
	t, ok := c.servers[tb].get(ts)
	if !ok {
		return fmt.Errorf("%s unable to find required server '%s' for tracking.", who, ts)
	}
	if tp := c.params(tb, t); tp["check"] != "enabled" && tp["agent-check"] != "enabled" && tp["track"] == nil {
		return fmt.Errorf("%s unable to use %s/%s for tracking as it does not have any check nor agent enabled.", who, tb, ts)
	}
	return nil
}

func checkServer(s Object) error {
	addr, _ := s["address"].(string)
	if _, err := netip.ParseAddr(addr); err != nil {
		return fmt.Errorf("parsing [haproxy.cfg] : 'server %s' : could not resolve address '%s'.", s["name"], addr)
	}
	return nil
}

// bindAddrs lists the listening addresses of every frontend, sorted.
func (c *config) bindAddrs() []string {
	var out []string
	for _, fe := range c.frontends.names {
		for _, b := range c.binds[fe].all() {
			addr, _ := b["address"].(string)
			port, _ := toInt(b["port"])
			if port == 0 {
				continue
			}
			if addr == "*" {
				addr = ""
			}
			ap := addr + ":" + fmt.Sprint(port)
			if a, err := netip.ParseAddr(addr); err == nil {
				ap = netip.AddrPortFrom(a, uint16(port)).String()
			}
			out = append(out, ap)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case float64:
		return int64(n), n == float64(int64(n))
	case int:
		return int64(n), true
	case int64:
		return n, true
	}
	return 0, false
}
