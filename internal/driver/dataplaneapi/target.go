package dataplaneapi

import (
	"maps"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// Free slots point here, in maintenance; nothing is ever sent to it.
const (
	freeAddr = "127.0.0.1"
	freePort = 1
)

// selected returns the backends of cfg the driver manages, named as in
// the API: every Service backend, or in seed mode the Service's backend
// under the seed name. A Service with several ports has one backend per
// port (NAME_PORT); seed mode takes the one named exactly NAME, else the
// one with the lowest port.
func (d *Driver) selected(cfg model.Config) model.Config {
	var out model.Config
	if d.opts.Seed == "" {
		// Every backend, the model.NodesBackend too when servers follow
		// their node (the controller leaves it out of single-Service mode).
		out.Backends, out.Frontends = cfg.Backends, cfg.Frontends
		return out
	}
	best, bestPort := -1, -1
	for i, b := range cfg.Backends {
		if b.Name == d.opts.Seed {
			best, bestPort = i, -1
			break
		}
		if p, ok := seedPort(d.opts.Seed, b.Name); ok && (best < 0 || (bestPort >= 0 && p < bestPort)) {
			best, bestPort = i, p
		}
	}
	if best >= 0 {
		b := *cfg.Backends[best] // a copy: the Config's backends are shared
		b.Name = d.opts.Seed
		out.Backends = []*model.Backend{&b}
	}
	return out
}

var portSuffix = regexp.MustCompile(`^_[0-9]+$`)

func seedPort(seed, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, seed)
	if !ok || !portSuffix.MatchString(rest) {
		return 0, false
	}
	p, err := strconv.Atoi(rest[1:])
	return p, err == nil
}

// layoutOf reads the slots of a backend from its servers in the API: the
// servers named s1, s2, ... without gap, with the node slot each follows
// (track _nodes/sK). Other servers are not slots (an older controller's,
// say) and are deleted when the backend is written. The servers of the
// model.NodesBackend have no port (portless).
func layoutOf(sec *section, portless bool) []model.Slot {
	byIdx := map[int]Object{}
	for _, c := range sec.children {
		if name, _ := c["name"].(string); name != "" {
			if i, ok := plan.SlotIndex(name); ok {
				byIdx[i] = c
			}
		}
	}
	var slots []model.Slot
	for i := 0; ; i++ {
		c, ok := byIdx[i]
		if !ok {
			return slots
		}
		sl := model.Slot{Used: c["maintenance"] != "enabled", Track: trackOf(c)}
		addr, _ := c["address"].(string)
		port, hasPort := toInt(c["port"])
		okPort, free := port > 0 && port < 65536, addr == freeAddr && port == freePort
		if portless {
			okPort, free = !hasPort, addr == freeAddr
		}
		if a, err := netip.ParseAddr(addr); err == nil && okPort && !free {
			sl.Server = model.Server{Addr: a, Port: uint16(port)}
		} else if sl.Used {
			sl.Used = false // not a server we could have written: rewrite it
		}
		slots = append(slots, sl)
	}
}

// trackOf is the model.Slot.Track of a server: 1 + the index of the
// model.NodesBackend slot it follows, 0 for none.
func trackOf(o Object) uint16 {
	t, _ := o["track"].(string)
	name, ok := strings.CutPrefix(t, model.NodesBackend+"/")
	if !ok {
		return 0
	}
	i, ok := plan.SlotIndex(name)
	if !ok || i >= 1<<16-1 {
		return 0
	}
	return uint16(i + 1)
}

func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case interface{ Int64() (int64, error) }:
		i, err := n.Int64()
		return i, err == nil
	case float64:
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	return 0, false
}

// target is the state the driver wants: have with the owned fields of
// every owned object set from cfg, and the servers in layout.
//
// The sections named in clean are known to be as wanted already (nothing
// of them changed since the last pass, whose target was prev): want
// shares prev's backends (their configuration may not be written yet)
// and have's frontends, and diff skips them.
//
// reload says that the pass reloads anyway: an older release's checked
// unbound slots (looseChecked) then lose their check; otherwise they
// keep it, so that an upgrade costs no reload of its own.
func (d *Driver) target(have, prev *state, cfg model.Config, layout model.Layout, clean map[string]bool, reload bool) (*state, map[string]bool) {
	want := &state{backends: map[string]*section{}, frontends: map[string]*section{}}
	drain := map[string]bool{}
	nodeCheck, agentInter := cfg.NodeCheck(), cfg.NodesAgentInter()
	for _, b := range cfg.Backends {
		h := have.backends[b.Name]
		if clean[b.Name] && prev != nil && prev.backends[b.Name] != nil && h != nil {
			want.backends[b.Name] = prev.backends[b.Name]
			continue
		}
		var base Object
		if h != nil {
			base = maps.Clone(h.base)
		} else {
			base = Object{"name": b.Name, "mode": "tcp"}
		}
		if d.opts.Seed == "" {
			affinity(base, b.Affinity) // first: it drops the rule lists
		}
		d.backendFields(base, b, agentInter)
		// Its unbound slots carry no check (nodes.go), but an older
		// release's checked ones until a reload is due.
		var loose model.Check
		if !reload && d.opts.Seed == "" && b.Name != model.NodesBackend && b.TrackNodes && !b.Check.Enabled && looseChecked(h) {
			loose = nodeCheck
		}
		if b.Name != model.NodesBackend || d.opts.Seed != "" {
			d.backendCheck(base, b.Check, loose)
		}
		sec := &section{base: base}
		for i, sl := range layout[b.Name] {
			name := model.SlotName(i)
			var o Object
			if h != nil {
				if old, _ := h.child(name); old != nil {
					o = maps.Clone(old)
				}
			}
			if o == nil {
				o = Object{"name": name}
			}
			setOrDelete(o, "track", model.NodesBackend+"/"+model.SlotName(int(sl.Track)-1), sl.Track != 0)
			if d.opts.Seed == "" && b.Name != model.NodesBackend {
				checkFields(o, loose, sl.Track == 0)
			}
			switch {
			case sl.Used && !sl.WantMaint():
				setAddr(o, b.Name, sl.Server.Addr.String(), sl.Server.Port)
				delete(o, "maintenance")
				if sl.Server.Drain {
					drain[b.Name+"/"+name] = true
				}
			default:
				o["maintenance"] = "enabled"
				if sl.Server.Addr.IsValid() {
					setAddr(o, b.Name, sl.Server.Addr.String(), sl.Server.Port)
				} else if _, ok := o["address"]; !ok {
					setAddr(o, b.Name, freeAddr, freePort)
				}
			}
			sec.children = append(sec.children, o)
		}
		want.backends[b.Name] = sec
	}
	for _, f := range cfg.Frontends {
		if h := have.frontends[f.Name]; clean[f.Name] && h != nil {
			want.frontends[f.Name] = h
			continue
		}
		var base Object
		if h := have.frontends[f.Name]; h != nil {
			base = maps.Clone(h.base)
		} else {
			base = Object{"name": f.Name}
		}
		base["mode"] = "tcp"
		base["default_backend"] = f.Backend
		d.sourceRanges(base, f)
		setOrDelete(base, "maxconn", int64(f.MaxConn), f.MaxConn > 0)
		setOrDelete(base, "client_timeout", ms(f.TimeoutClient), f.TimeoutClient > 0)
		sec := &section{base: base}
		for _, bd := range f.Binds {
			addr, name := "*", "all_"+strconv.Itoa(int(bd.Port))
			if bd.Addr.IsValid() {
				addr = bd.Addr.String()
				name = netip.AddrPortFrom(bd.Addr, bd.Port).String()
			}
			o := Object{"name": name}
			if h := have.frontends[f.Name]; h != nil {
				if old, _ := h.child(name); old != nil {
					o = maps.Clone(old) // fields the API adds stay as read
				}
			}
			o["address"], o["port"] = addr, int64(bd.Port)
			setOrDelete(o, "accept_proxy", true, f.AcceptProxy)
			setOrDelete(o, "transparent", true, bd.Transparent)
			sec.children = append(sec.children, o)
		}
		want.frontends[f.Name] = sec
	}
	return want, drain
}

// setAddr sets a server's address and port; the servers of the
// model.NodesBackend have none (they stand for a node, and take no
// traffic).
func setAddr(o Object, backend, addr string, port uint16) {
	o["address"] = addr
	setOrDelete(o, "port", int64(port), backend != model.NodesBackend)
}

// backendFields sets the fields of a backend the driver owns. In seed mode
// that is the balance, the check (option tcp-check) and the default-server
// settings (checks, PROXY v2); every other field of the operator's backend
// stays as read. Otherwise also the mode and timeouts, as the HAProxy
// driver renders them.
func (d *Driver) backendFields(base Object, b *model.Backend, agentInter time.Duration) {
	if b.Name == model.NodesBackend && d.opts.Seed == "" {
		nodesFields(base, b, agentInter)
		return
	}
	base["balance"] = map[string]any{"algorithm": b.Balance}
	setOrDelete(base, "hash_type", map[string]any{"method": "consistent"}, b.Balance == "source")
	var ds map[string]any
	if old, ok := base["default_server"].(map[string]any); ok && d.opts.Seed != "" {
		ds = maps.Clone(old)
	} else {
		ds = map[string]any{}
	}
	ownCheck(ds, b.Check, b.SendProxyV2)
	setOrDelete(base, "default_server", ds, len(ds) > 0)
	if d.opts.Seed != "" {
		return
	}
	base["mode"] = "tcp"
	setOrDelete(base, "connect_timeout", ms(b.TimeoutConnect), b.TimeoutConnect > 0)
	setOrDelete(base, "server_timeout", ms(b.TimeoutServer), b.TimeoutServer > 0)
}

func setOrDelete(o map[string]any, k string, v any, set bool) {
	if set {
		o[k] = v
	} else {
		delete(o, k)
	}
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// layoutFrom is the slots of the backends cfg names: as the last pass
// left them (known; the configuration may lag behind), else as the
// configuration has them.
func layoutFrom(have *state, cfg model.Config, known model.Layout) model.Layout {
	l := make(model.Layout, len(cfg.Backends))
	for _, b := range cfg.Backends {
		if slots, ok := known[b.Name]; ok {
			l[b.Name] = slots
			continue
		}
		if h := have.backends[b.Name]; h != nil {
			if slots := layoutOf(h, b.Name == model.NodesBackend); slots != nil {
				l[b.Name] = slots
			}
		}
	}
	return l
}

// cleanSections names the sections of cfg that are as the last pass left
// them: the same servers (the very same slice: the desired package hands
// it out again while nothing changes) and settings as in applied.
func cleanSections(cfg, applied model.Config) map[string]bool {
	clean := make(map[string]bool, len(cfg.Backends)+len(cfg.Frontends))
	prev := make(map[string]int, len(applied.Backends))
	for i, b := range applied.Backends {
		prev[b.Name] = i
	}
	for _, b := range cfg.Backends {
		if i, ok := prev[b.Name]; ok && applied.Backends[i].SameStructure(b) && model.SameSlice(applied.Backends[i].Servers, b.Servers) {
			clean[b.Name] = true
		}
	}
	fes := make(map[string]int, len(applied.Frontends))
	for i, f := range applied.Frontends {
		fes[f.Name] = i
	}
	for _, f := range cfg.Frontends {
		if i, ok := fes[f.Name]; ok && applied.Frontends[i].Equal(f) {
			clean[f.Name] = true
		}
	}
	return clean
}

// ownedLists drops the rule lists of a section of ours: the driver writes
// the ones it wants (a rule someone added to it goes).
func ownedLists(base Object) {
	for k := range base {
		if strings.HasSuffix(k, "_list") {
			delete(base, k)
		}
	}
}

// affinity sets ClientIP session affinity (spec.sessionAffinity): a stick
// table on the source address (IPv6 keys hold IPv4 clients too), entries
// kept for the timeout after a client's last connection.
func affinity(base Object, d time.Duration) {
	ownedLists(base)
	delete(base, "stick_table")
	if d <= 0 {
		return
	}
	base["stick_table"] = map[string]any{"type": "ipv6", "size": int64(1 << 20), "expire": ms(d)}
	base["stick_rule_list"] = []any{map[string]any{"type": "on", "pattern": "src"}}
}
