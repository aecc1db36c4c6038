package dataplaneapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Object is one configuration object of the API.
type Object = dataplane.Object

// section is a frontend or backend the driver owns: the section itself,
// without children, and its binds or servers in the API's order.
type section struct {
	base     Object
	children []Object
}

func (s *section) child(name string) (Object, int) {
	for i, c := range s.children {
		if c["name"] == name {
			return c, i
		}
	}
	return nil, -1
}

// state is what the API holds of the objects the driver owns.
type state struct {
	version   int64
	backends  map[string]*section
	frontends map[string]*section
}

// owned is the name pattern of the frontends and backends the driver owns
// when it manages every Service: the names the HAProxy driver renders,
// fe_/be_ + namespace _ name _ port. Kubernetes names never contain "_",
// so no Service gives a name another Service's could collide with.
var owned = regexp.MustCompile(`^(fe|be)_[a-z0-9]([-a-z0-9]*[a-z0-9])?_[a-z0-9]([-a-z0-9]*[a-z0-9])?_[0-9]+$`)

// Owned reports whether the driver owns a frontend or backend of this name
// when it manages every Service (not in seed mode): those, and the
// backend model.NodesBackend ("_nodes": no Service's name starts with _).
func Owned(name string) bool { return name == model.NodesBackend || owned.MatchString(name) }

// isChildKey reports whether a key of a section read with full_section=true
// holds its children, not the section's own fields. Rule lists (*_list)
// are the section's own: in every Service's sections the driver owns
// them (target sets those it wants and drops the others).
func isChildKey(k string) bool {
	return k == "servers" || k == "server_templates" || k == "binds"
}

func splitFull(o Object, child string) *section {
	s := &section{base: Object{}}
	for k, v := range o {
		if !isChildKey(k) {
			s.base[k] = v
		}
	}
	if m, ok := o[child].(map[string]any); ok {
		for _, v := range m {
			if c, ok := v.(map[string]any); ok {
				s.children = append(s.children, c)
			}
		}
		sortByName(s.children)
	}
	return s
}

// read reads the owned objects: in seed mode the one backend (nil when it
// does not exist), else every owned frontend and backend.
func (d *Driver) read(ctx context.Context, version int64) (*state, error) {
	st := &state{version: version, backends: map[string]*section{}, frontends: map[string]*section{}}
	if d.opts.Seed != "" {
		base, _, err := d.c.Get(ctx, dataplane.BackendPath(d.opts.Seed), "")
		if errors.Is(err, dataplane.ErrNotFound) {
			return st, nil
		}
		if err != nil {
			return nil, err
		}
		servers, _, err := d.c.List(ctx, dataplane.ServersPath(d.opts.Seed), "")
		if err != nil {
			return nil, err
		}
		// Its http-check rules come only with the section read whole,
		// which would bring its servers and templates too: as a list.
		var rules []any
		if _, err := d.c.Do(ctx, http.MethodGet, dataplane.HTTPChecksPath(d.opts.Seed), nil, nil, &rules); err != nil {
			return nil, err
		}
		if len(rules) > 0 {
			base[httpCheckList] = rules
		}
		st.backends[d.opts.Seed] = &section{base: base, children: servers}
		return st, nil
	}
	for _, kind := range []struct {
		path, child string
		into        map[string]*section
	}{{dataplane.BackendsPath, "servers", st.backends}, {dataplane.FrontendsPath, "binds", st.frontends}} {
		var all []Object
		if _, err := d.c.Do(ctx, "GET", kind.path, map[string][]string{"full_section": {"true"}}, nil, &all); err != nil {
			return nil, err
		}
		for _, o := range all {
			if name, _ := o["name"].(string); Owned(name) {
				kind.into[name] = splitFull(o, kind.child)
			}
		}
	}
	return st, nil
}

// same reports whether two JSON values are equal, numbers by value
// (json.Number as read, int64 as built), maps key by key.
func same(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !same(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !same(x[i], y[i]) {
				return false
			}
		}
		return true
	case string, bool, nil:
		return a == b
	}
	if n, ok := number(a); ok {
		m, ok := number(b)
		return ok && n == m
	}
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// number is a JSON number as a string in its shortest form.
func number(v any) (string, bool) {
	switch n := v.(type) {
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return strconv.FormatInt(i, 10), true
		}
		return n.String(), true
	case int64:
		return strconv.FormatInt(n, 10), true
	case int:
		return strconv.Itoa(n), true
	case float64:
		return strconv.FormatFloat(n, 'f', -1, 64), true
	}
	return "", false
}

// liveFields are the server fields the API changes without a reload when
// a server is replaced outside a transaction.
var liveFields = map[string]bool{"address": true, "port": true, "weight": true, "maintenance": true}

// putReloads reports whether a server PUT outside a transaction from cur
// to want reloads although they differ only in live fields: the API v3.4.0
// reloads (202) for a new address of a server without a port (a node's
// slot in model.NodesBackend), and for a live number removed
// (TestContractLivePuts). Such a slot is written as text instead.
func putReloads(cur, want Object) bool {
	if _, ok := want["port"]; !ok && !same(cur["address"], want["address"]) {
		return true
	}
	for _, k := range []string{"port", "weight"} {
		if _, ok := want[k]; !ok && cur[k] != nil {
			return true
		}
	}
	return false
}

// onlyLive reports whether servers a and b differ only in live fields.
func onlyLive(a, b Object) bool {
	for k := range a {
		if _, ok := b[k]; !ok && !liveFields[k] {
			return false
		}
	}
	for k, v := range b {
		if !liveFields[k] && !same(a[k], v) {
			return false
		}
	}
	return true
}
