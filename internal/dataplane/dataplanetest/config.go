package dataplanetest

import (
	"maps"
	"net/http"
	"slices"
	"strings"
)

// configuration serves /v3/services/haproxy/configuration/...
func (s *Server) configuration(w http.ResponseWriter, r *http.Request, seg []string, body Object) {
	q := r.URL.Query()
	if len(seg) == 1 && seg[0] == "version" && r.Method == http.MethodGet {
		v := s.version
		if t := s.txs[q.Get("transaction_id")]; t != nil {
			v = t.version
		}
		s.reply(w, http.StatusOK, v)
		return
	}
	if r.Method == http.MethodGet {
		c, ok := s.readConfig(w, r)
		if !ok {
			return
		}
		out, e := read(c, seg, q.Get("full_section") == "true")
		if e != nil {
			s.fail(w, e)
			return
		}
		s.reply(w, http.StatusOK, out)
		return
	}
	op, e := mutation(r.Method, seg, body, q.Get("full_section") == "true")
	if e != nil {
		s.fail(w, e)
		return
	}
	s.write(w, r, op)
}

// readConfig is the configuration a GET reads: that of the request's
// transaction_id, else the committed one; false (answered 404) for a
// transaction that does not exist.
func (s *Server) readConfig(w http.ResponseWriter, r *http.Request) (*config, bool) {
	id := r.URL.Query().Get("transaction_id")
	if id == "" {
		return s.cfg, true
	}
	t := s.txs[id]
	if t == nil {
		s.fail(w, errf(http.StatusNotFound, "transaction %s does not exist", id))
		return nil, false
	}
	return t.cfg, true
}

// read answers a GET on a configuration path of c.
func read(c *config, seg []string, full bool) (any, *apiErr) {
	if len(seg) == 0 {
		return nil, errf(http.StatusNotFound, "not found")
	}
	kind := seg[0]
	var sections *list
	var children map[string]*list
	child := ""
	switch kind {
	case "backends":
		sections, children, child = c.backends, c.servers, "servers"
	case "frontends":
		sections, children, child = c.frontends, c.binds, "binds"
	default:
		return nil, errf(http.StatusNotFound, "path not found")
	}
	withChildren := func(name string, o Object) Object {
		if kind == "frontends" {
			o = misread(o)
		}
		if !full {
			// Measured: the rule lists (*_list) come only with the
			// section read whole.
			return withoutLists(o)
		}
		o = maps.Clone(o)
		m := map[string]any{}
		for _, ch := range children[name].all() {
			m[ch["name"].(string)] = ch
		}
		o[child] = m
		if kind == "backends" && len(c.templates[name]) > 0 {
			t := map[string]any{}
			for _, tp := range c.templates[name] {
				t[tp["prefix"].(string)] = tp
			}
			o["server_templates"] = t
		}
		return o
	}
	if len(seg) == 1 {
		out := []Object{}
		for _, name := range sections.names {
			out = append(out, withChildren(name, sections.m[name]))
		}
		return out, nil
	}
	name := seg[1]
	o, ok := sections.get(name)
	if !ok {
		return nil, errf(http.StatusNotFound, "%s %s not found", kind[:len(kind)-1], name)
	}
	if len(seg) == 2 {
		return withChildren(name, o), nil
	}
	if kind == "backends" && seg[2] == "server_templates" && len(seg) == 3 {
		return c.templates[name], nil
	}
	if kind == "frontends" && seg[2] == "tcp_request_rules" && len(seg) == 3 {
		rules, _ := misread(o)["tcp_request_rule_list"].([]any)
		if rules == nil {
			rules = []any{}
		}
		return rules, nil
	}
	if seg[2] != child {
		return nil, errf(http.StatusNotFound, "path not found")
	}
	if len(seg) == 3 {
		all := children[name].all()
		if len(all) == 0 {
			return nil, nil // the real API sends null for an empty list
		}
		return all, nil
	}
	ch, ok := children[name].get(seg[3])
	if !ok {
		return nil, errf(http.StatusNotFound, "%s %s not found in %s", child[:len(child)-1], seg[3], name)
	}
	return ch, nil
}

// op changes a configuration; it returns the object to echo, and the
// change when it is one the API applies at runtime, without a reload.
type op func(c *config) (echo any, live *liveChange, e *apiErr)

// liveChange is a versioned write outside a transaction that the API
// applies at runtime (200, no Reload-Id, no reload; haproxy.cfg is written
// and the version bumps): a server written whole, or a frontend's maxconn.
type liveChange struct {
	backend  string
	server   Object
	old      Object // the server as haproxy.cfg had it
	frontend string
	maxconn  any // the frontend's maxconn as written
}

func mutation(method string, seg []string, body Object, full bool) (op, *apiErr) {
	if len(seg) < 1 || (seg[0] != "backends" && seg[0] != "frontends") {
		return nil, errf(http.StatusNotFound, "path not found")
	}
	section, schema, child, childSchema := "backend", "backend", "servers", "server"
	if seg[0] == "frontends" {
		section, schema, child, childSchema = "frontend", "frontend", "binds", "bind"
	}
	// sets returns the sections and children of c; with own, the
	// sections list is c's own copy (copies of a config share lists until
	// they change them).
	sets := func(c *config, own bool) (*list, map[string]*list) {
		if section == "backend" {
			if own {
				c.backends = c.backends.clone()
			}
			return c.backends, c.servers
		}
		if own {
			c.frontends = c.frontends.clone()
		}
		return c.frontends, c.binds
	}
	need := func(sch string) *apiErr {
		if method == http.MethodDelete {
			return nil
		}
		if body == nil {
			return errf(http.StatusBadRequest, "missing request body")
		}
		if err := validate(sch, body); err != nil {
			return &apiErr{http.StatusUnprocessableEntity, err.Error()}
		}
		return nil
	}
	switch {
	case len(seg) == 1 && method == http.MethodPost, len(seg) == 2 && method != http.MethodPost:
		// With full_section=true the body carries the children too, and
		// they replace the section's.
		var kids *children
		if full && body != nil && method != http.MethodDelete {
			var e *apiErr
			if body, kids, e = splitFull(body, child, childSchema, section == "backend"); e != nil {
				return nil, e
			}
		}
		if e := need(schema); e != nil {
			return nil, e
		}
		setKids := func(c *config, ch map[string]*list, name string) {
			if kids == nil {
				return
			}
			ch[name] = kids.items
			if section == "backend" {
				c.templates[name] = kids.templates
			}
		}
		return func(c *config) (any, *liveChange, *apiErr) {
			secs, ch := sets(c, true)
			name := ""
			if len(seg) == 2 {
				name = seg[1]
			} else {
				name, _ = body["name"].(string)
			}
			old, exists := secs.get(name)
			stored := body
			if !full && method != http.MethodDelete {
				stored = listsOf(body, old) // measured: the lists are written only with the section whole
			}
			if section == "backend" && stored != nil {
				stored = withoutHTTPChkParams(stored)
			}
			switch method {
			case http.MethodPost:
				if exists {
					return nil, nil, errf(http.StatusConflict, "%s %s already exists", section, name)
				}
				secs.put(name, stored)
				ch[name] = newList()
				setKids(c, ch, name)
			case http.MethodPut:
				if !exists {
					return nil, nil, errf(http.StatusNotFound, "%s %s does not exist", section, name)
				}
				if body["name"] != name {
					return nil, nil, errf(http.StatusBadRequest, "name in the body (%v) differs from %s", body["name"], name)
				}
				secs.put(name, stored) // the whole section; children stay, unless full
				setKids(c, ch, name)
				if section == "frontend" && frontendLive(old, body) {
					return body, &liveChange{frontend: name, maxconn: body["maxconn"]}, nil
				}
			case http.MethodDelete:
				if !exists {
					return nil, nil, errf(http.StatusNotFound, "%s %s does not exist", section, name)
				}
				secs.del(name)
				delete(ch, name)
				delete(c.templates, name)
			}
			return body, nil, nil
		}, nil
	case section == "backend" && len(seg) == 3 && seg[2] == "server_templates" && method == http.MethodPost:
		if e := need("server_template"); e != nil {
			return nil, e
		}
		return func(c *config) (any, *liveChange, *apiErr) {
			if _, ok := c.backends.get(seg[1]); !ok {
				return nil, nil, errf(http.StatusBadRequest, "parent backend %s does not exist", seg[1])
			}
			for _, t := range c.templates[seg[1]] {
				if t["prefix"] == body["prefix"] {
					return nil, nil, errf(http.StatusConflict, "server template %v already exists in %s", body["prefix"], seg[1])
				}
			}
			c.templates[seg[1]] = append(slices.Clone(c.templates[seg[1]]), body)
			return body, nil, nil
		}, nil
	case len(seg) == 3 && seg[2] == child && method == http.MethodPost, len(seg) == 4 && seg[2] == child && method != http.MethodPost:
		if e := need(childSchema); e != nil {
			return nil, e
		}
		parent := seg[1]
		return func(c *config) (any, *liveChange, *apiErr) {
			secs, ch := sets(c, false)
			if _, ok := secs.get(parent); !ok {
				return nil, nil, errf(http.StatusBadRequest, "parent %s %s does not exist", section, parent)
			}
			items := ch[parent].clone()
			ch[parent] = items
			name := ""
			if len(seg) == 4 {
				name = seg[3]
			} else {
				name, _ = body["name"].(string)
			}
			old, exists := items.get(name)
			switch method {
			case http.MethodPost:
				if exists {
					return nil, nil, errf(http.StatusConflict, "%s %s already exists in %s", childSchema, name, parent)
				}
				items.put(name, body)
			case http.MethodPut:
				if !exists {
					return nil, nil, errf(http.StatusNotFound, "%s %s does not exist in %s", childSchema, name, parent)
				}
				if body["name"] != name {
					return nil, nil, errf(http.StatusBadRequest, "name in the body (%v) differs from %s", body["name"], name)
				}
				items.put(name, body)
				if section == "backend" && serverLive(old, body) {
					return body, &liveChange{backend: parent, server: body, old: old}, nil
				}
			case http.MethodDelete:
				if !exists {
					return nil, nil, errf(http.StatusNotFound, "%s %s does not exist in %s", childSchema, name, parent)
				}
				items.del(name)
			}
			return body, nil, nil
		}, nil
	}
	return nil, errf(http.StatusNotFound, "path not found")
}

// withoutLists is o without its rule lists (tcp_request_rule_list,
// http_check_list, stick_rule_list, ...).
// listsOf is body with the rule lists (*_list) of old instead of its own:
// a section written without full_section=true keeps the lists it had (a
// new one gets none), whatever the body says, though the answer echoes
// them (measured on the real API v3.4.0).
func listsOf(body, old Object) Object {
	o := maps.Clone(withoutLists(body))
	for k, v := range old {
		if strings.HasSuffix(k, "_list") {
			o[k] = v
		}
	}
	return o
}

func withoutLists(o Object) Object {
	for k := range o {
		if strings.HasSuffix(k, "_list") {
			o = maps.Clone(o)
			for k := range o {
				if strings.HasSuffix(k, "_list") {
					delete(o, k)
				}
			}
			return o
		}
	}
	return o
}
