package dataplanetest

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// rtServer is the live state of one server in the running HAProxy.
type rtServer struct {
	id      int
	address string
	port    int64
	admin   string // its own: ready, drain, maint
	track   string // the server it follows (BACKEND/SERVER), "" for none
	agent   string // its agent: "" (none configured), "enabled", "disabled"
}

// Restart is HAProxy restarting (not through the API): it runs the
// configuration the API holds, with none of the runtime changes.
func (s *Server) Restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = s.cfg.clone()
	s.resetRuntime()
}

// resetRuntime gives every server of the running config the state its
// configuration says, in a new worker: a reload forgets runtime changes.
func (s *Server) resetRuntime() {
	s.pid++
	s.loadACLs()
	s.runtime = map[string]map[string]*rtServer{}
	s.rtAdded = map[string][]string{}
	for _, be := range s.running.backends.names {
		m := map[string]*rtServer{}
		for i, o := range s.running.servers[be].all() {
			m[o["name"].(string)] = fromConfig(i+1, be, o)
		}
		s.runtime[be] = m
	}
}

func fromConfig(id int, backend string, o Object) *rtServer {
	rs := &rtServer{id: id, admin: "ready"}
	rs.address, _ = o["address"].(string)
	rs.port, _ = toInt(o["port"])
	if o["maintenance"] == "enabled" {
		rs.admin = "maint"
	}
	if o["agent-check"] == "enabled" {
		rs.agent = "enabled"
	}
	if t, ok := o["track"].(string); ok {
		if !strings.Contains(t, "/") {
			t = backend + "/" + t
		}
		rs.track = t
	}
	return rs
}

// inherited is the state a server inherits from the servers it tracks
// (HAProxy's IMAINT and IDRAIN admin bits): "maint" when one of them is
// in maintenance, "drain" when one drains, else "".
func (s *Server) inherited(rs *rtServer) string {
	out := ""
	for range 16 { // HAProxy refuses track loops; bounded all the same
		if rs.track == "" {
			return out
		}
		be, name, _ := strings.Cut(rs.track, "/")
		if rs = s.runtime[be][name]; rs == nil {
			return out
		}
		switch rs.admin {
		case "maint":
			return "maint"
		case "drain":
			out = "drain"
		}
	}
	return out
}

// reported is what the runtime endpoints report of a server, as the real
// API v3.4.0 does (measured against HAProxy 2.6.12; they report no admin
// bits): its own drain as "drain"; its own maintenance, or maintenance or
// drain inherited from the server it tracks, as "maint" (an inherited
// drain too, while it still serves); else "ready". So a server following
// a node in maintenance reads "maint" whatever its own state, and setting
// it ready changes what it reads only once the node is ready.
func (s *Server) reported(rs *rtServer) (admin, op string) {
	inh := s.inherited(rs)
	switch {
	case rs.admin == "drain":
		admin = "drain"
	case rs.admin == "maint" || inh != "":
		admin = "maint"
	default:
		admin = "ready"
	}
	op = "up"
	if rs.admin == "maint" || inh == "maint" {
		op = "down"
	}
	return admin, op
}

// applyLive is the API changing at runtime what it wrote to the
// configuration (no reload): a frontend's maxconn, or a server.
func (s *Server) applyLive(l *liveChange) {
	if l.frontend != "" {
		if fe, ok := s.running.frontends.get(l.frontend); ok && !sameField(fe["maxconn"], l.maxconn) {
			fe = cloneObject(fe)
			fe["maxconn"] = l.maxconn
			s.running.frontends = s.running.frontends.clone()
			s.running.frontends.put(l.frontend, fe)
		}
		return
	}
	name := l.server["name"].(string)
	rs := s.runtime[l.backend][name]
	if rs == nil {
		return
	}
	n := fromConfig(rs.id, l.backend, l.server)
	if n.admin == "ready" && rs.admin == "drain" {
		n.admin = "drain"
	}
	n.agent = rtAgent(rs.agent, l.old, l.server)
	*rs = *n
	// The running configuration now has this server as written.
	if srvs := s.running.servers[l.backend]; srvs != nil {
		if _, ok := srvs.get(name); ok {
			srvs = srvs.clone() // shared with other copies of the config
			srvs.put(name, cloneObject(l.server))
			s.running.servers[l.backend] = srvs
		}
	}
}

func (s *Server) json(name string, rs *rtServer) map[string]any {
	admin, op := s.reported(rs)
	return map[string]any{"name": name, "id": strconv.Itoa(rs.id), "address": rs.address, "port": rs.port,
		"admin_state": admin, "operational_state": op}
}

// runtimeEndpoint serves /v3/services/haproxy/runtime/backends/{b}/servers[/{s}].
func (s *Server) runtimeEndpoint(w http.ResponseWriter, r *http.Request, seg []string, body Object) {
	if len(seg) == 1 && seg[0] == "info" && r.Method == http.MethodGet {
		// show info of the worker; its pid changes at every reload.
		s.reply(w, http.StatusOK, map[string]any{"info": map[string]any{"pid": s.pid, "version": "2.6.12"}})
		return
	}
	if len(seg) < 3 || seg[0] != "backends" || seg[2] != "servers" || len(seg) > 4 {
		s.fail(w, errf(http.StatusNotFound, "path not found"))
		return
	}
	srvs, ok := s.runtime[seg[1]]
	if !ok {
		s.fail(w, errf(http.StatusNotFound, "backend %s not found", seg[1]))
		return
	}
	if len(seg) == 3 {
		switch r.Method {
		case http.MethodGet:
			out := []map[string]any{}
			for _, name := range s.runtimeNames(seg[1]) {
				out = append(out, s.json(name, srvs[name]))
			}
			s.reply(w, http.StatusOK, out)
		case http.MethodPost:
			// A dynamic server: it starts in maintenance, and the next
			// reload forgets it (it is not in the configuration).
			name, _ := body["name"].(string)
			addr, _ := body["address"].(string)
			port, _ := toInt(body["port"])
			if name == "" || addr == "" {
				s.fail(w, errf(http.StatusUnprocessableEntity, "name and address in body are required"))
				return
			}
			if srvs[name] != nil {
				s.fail(w, errf(http.StatusConflict, "server %s already exists in %s", name, seg[1]))
				return
			}
			srvs[name] = &rtServer{id: len(srvs) + 1, address: addr, port: port, admin: "maint"}
			s.rtAdded[seg[1]] = append(s.rtAdded[seg[1]], name)
			s.reply(w, http.StatusCreated, s.json(name, srvs[name]))
		default:
			s.fail(w, errf(http.StatusMethodNotAllowed, "method not allowed"))
		}
		return
	}
	rs := srvs[seg[3]]
	if rs == nil {
		s.fail(w, errf(http.StatusNotFound, "server %s not found in %s", seg[3], seg[1]))
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.reply(w, http.StatusOK, s.json(seg[3], rs))
	case http.MethodDelete:
		delete(srvs, seg[3]) // even a server in service
		s.reply(w, http.StatusNoContent, nil)
	case http.MethodPut:
		// Each field given is set, the admin state first, then the
		// address and port (set server addr), as the real API does;
		// fields left out stay. The admin state is set only when it
		// differs from the one the endpoint reports (the real API v3.4.0
		// compares with what it reads): so "maint" on a server following
		// a node in maintenance, which reads "maint", changes nothing,
		// and its own state stays as it was.
		st, hasState := body["admin_state"].(string)
		if _, given := body["admin_state"]; given && st != "ready" && st != "drain" && st != "maint" {
			s.fail(w, errf(http.StatusUnprocessableEntity, "admin_state in body should be one of [ready maint drain]"))
			return
		}
		addr, _ := body["address"].(string)
		port, hasPort := toInt(body["port"])
		if hasPort && (port < 1 || port > 65535) {
			s.fail(w, errf(http.StatusUnprocessableEntity, "port in body should be between 1 and 65535"))
			return
		}
		if _, err := netip.ParseAddr(addr); err != nil {
			addr = "" // measured: an address HAProxy refuses is left as it was, and the answer is 200
		}
		if rep, _ := s.reported(rs); hasState && rep != st {
			rs.admin = st
		}
		if addr != "" {
			rs.address = addr
		}
		if hasPort {
			rs.port = port
		}
		s.reply(w, http.StatusOK, s.json(seg[3], rs))
	default:
		s.fail(w, errf(http.StatusMethodNotAllowed, "method not allowed"))
	}
}

// ServerState is what HAProxy runs for one server.
type ServerState struct {
	Name    string
	Address string
	Port    int64
	Admin   string // ready, drain, maint: as the runtime endpoints report it (inherited maintenance too)
}

func (st ServerState) String() string {
	return fmt.Sprintf("%s=%s:%d(%s)", st.Name, st.Address, st.Port, st.Admin)
}

// Running lists what HAProxy runs for backend: its servers and their live
// state, in configuration order; ok is false when it runs no such backend.
func (s *Server) Running(backend string) (out []ServerState, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	srvs, ok := s.runtime[backend]
	if !ok {
		return nil, false
	}
	for _, name := range s.runtimeNames(backend) {
		rs := srvs[name]
		admin, _ := s.reported(rs)
		out = append(out, ServerState{name, rs.address, rs.port, admin})
	}
	return out, true
}

// runtimeNames lists the servers HAProxy runs in backend: those of the
// running configuration, then those added at runtime, less those deleted.
func (s *Server) runtimeNames(backend string) []string {
	var out []string
	srvs := s.runtime[backend]
	for _, name := range append(slices.Clone(s.running.servers[backend].names), s.rtAdded[backend]...) {
		if srvs[name] != nil {
			out = append(out, name)
		}
	}
	return out
}

// Load sets the configuration HAProxy was started with (not a reload):
// backends with their servers and server templates, frontends with their
// binds.
func (s *Server) Load(backends []Section, frontends []Section) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.backends, s.cfg.frontends = s.cfg.backends.clone(), s.cfg.frontends.clone()
	for _, b := range backends {
		name := b.Object["name"].(string)
		s.cfg.backends.put(name, cloneObject(b.Object))
		l := newList()
		for _, o := range b.Children {
			l.put(o["name"].(string), cloneObject(o))
		}
		s.cfg.servers[name] = l
		s.cfg.templates[name] = b.Templates
	}
	for _, f := range frontends {
		name := f.Object["name"].(string)
		s.cfg.frontends.put(name, cloneObject(f.Object))
		l := newList()
		for _, o := range f.Children {
			l.put(o["name"].(string), cloneObject(o))
		}
		s.cfg.binds[name] = l
	}
	s.version++
	s.running = s.cfg.clone()
	s.resetRuntime()
}

// Section is a frontend or backend with its binds or servers.
type Section struct {
	Object    Object
	Children  []Object
	Templates []Object // backends: server templates
}

// Backend returns the configuration the API holds for a backend: the
// section, its servers and its server templates.
func (s *Server) Backend(name string) (Section, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.cfg.backends.get(name)
	if !ok {
		return Section{}, false
	}
	return Section{Object: cloneObject(o), Children: cloneAll(s.cfg.servers[name].all()), Templates: cloneAll(s.cfg.templates[name])}, true
}

// Names lists the frontends and backends the API holds.
func (s *Server) Names() (frontends, backends []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.cfg.frontends.names...), append([]string(nil), s.cfg.backends.names...)
}

func cloneAll(objs []Object) []Object {
	out := make([]Object, len(objs))
	for i, o := range objs {
		out[i] = cloneObject(o)
	}
	return out
}
