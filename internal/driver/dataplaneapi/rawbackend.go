package dataplaneapi

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The backends and servers of the raw path (raw.go), field by field.

var algorithms = []string{"roundrobin", "leastconn", "source", "first", "random", "static-rr"}

func backendField(l *lines, o Object, k string) {
	switch k {
	case "mode":
		v, err := enumOf(o, k, "tcp", "http")
		l.fail(err)
		l.add("mode", v)
	case "balance":
		m, _ := o[k].(map[string]any)
		if len(m) != 1 {
			l.fail(notRenderable("balance %v", o[k]))
			return
		}
		v, err := enumOf(m, "algorithm", algorithms...)
		l.fail(err)
		l.add("balance", v)
	case "hash_type":
		m, _ := o[k].(map[string]any)
		if len(m) != 1 {
			l.fail(notRenderable("hash_type %v", o[k]))
			return
		}
		v, err := enumOf(m, "method", "consistent", "map-based")
		l.fail(err)
		l.add("hash-type", v)
	case "adv_check":
		v, err := enumOf(o, k, "tcp-check", "httpchk")
		l.fail(err)
		if v == "httpchk" {
			l.fail(httpchk(l, o))
		} else {
			l.add("option tcp-check")
		}
	case "httpchk_params", "http_check_list":
		if o["adv_check"] != "httpchk" {
			l.fail(notRenderable("%s without option httpchk", k))
		}
	case "connect_timeout", "server_timeout":
		v, err := uintOf(o, k)
		l.fail(err)
		l.add("timeout", strings.TrimSuffix(k, "_timeout"), v)
	case "stick_table":
		m, _ := o[k].(map[string]any)
		typ, err := enumOf(m, "type", "ip", "ipv6")
		l.fail(err)
		size, err := uintOf(m, "size")
		l.fail(err)
		expire, err := uintOf(m, "expire")
		l.fail(err)
		if len(m) != 3 {
			l.fail(notRenderable("stick_table %v", m))
		}
		l.add("stick-table type", typ, "size", size, "expire", expire)
	case "stick_rule_list":
		rules, _ := o[k].([]any)
		if len(rules) != 1 {
			l.fail(notRenderable("stick_rule_list %v", o[k]))
			return
		}
		r, _ := rules[0].(map[string]any)
		if len(r) != 2 || r["type"] != "on" || r["pattern"] != "src" {
			l.fail(notRenderable("stick rule %v", r))
			return
		}
		l.add("stick on src")
	case "default_server":
		m, _ := o[k].(map[string]any)
		parts, err := serverParams(m)
		l.fail(err)
		l.add(append([]string{"default-server"}, parts...)...)
	default:
		l.fail(notRenderable("backend field %s", k))
	}
}

// serverParams renders the server keywords the driver sets (in
// default-server or on a server).
func serverParams(m map[string]any) ([]string, error) {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch k {
		case "check", "send-proxy-v2", "check-send-proxy":
			if m[k] != "enabled" {
				return nil, notRenderable("%s %v", k, m[k])
			}
			parts = append(parts, k)
		case "maintenance":
			if m[k] != "enabled" {
				return nil, notRenderable("%s %v", k, m[k])
			}
			parts = append(parts, "disabled")
		case "inter", "rise", "fall", "weight", "agent-port", "agent-inter", "health_check_port":
			v, err := uintOf(m, k)
			if err != nil {
				return nil, err
			}
			parts = append(parts, strings.Replace(k, "health_check_port", "port", 1), v)
		case "agent-check":
			if m[k] != "enabled" {
				return nil, notRenderable("%s %v", k, m[k])
			}
			parts = append(parts, k)
		case "agent-addr":
			a, err := netip.ParseAddr(fmt.Sprint(m[k]))
			if err != nil || a.Zone() != "" {
				return nil, notRenderable("%s %v", k, m[k])
			}
			parts = append(parts, k, a.String())
		case "track":
			// BACKEND/SERVER, each a word.
			be, srv, ok := strings.Cut(fmt.Sprint(m[k]), "/")
			if _, isStr := m[k].(string); !isStr || !ok || !wordRe.MatchString(be) || !wordRe.MatchString(srv) {
				return nil, notRenderable("%s %v", k, m[k])
			}
			parts = append(parts, k, be+"/"+srv)
		default:
			return nil, notRenderable("server field %s", k)
		}
	}
	return parts, nil
}

func serverLine(l *lines, o Object) error {
	name, err := tokenOf(o, "name")
	if err != nil {
		return err
	}
	ap, err := addrPortOf(o, false)
	if err != nil {
		return err
	}
	rest := maps.Clone(o)
	delete(rest, "name")
	delete(rest, "address")
	delete(rest, "port")
	parts, err := serverParams(rest)
	if err != nil {
		return err
	}
	l.add(append([]string{"server", name, ap}, parts...)...)
	return nil
}

// httpchk renders a backend's HTTP check (the node check of the
// model.NodesBackend and of unbound slots, or a Service's own check, as on
// its healthCheckNodePort): option httpchk METHOD PATH and the one rule, a
// 200 expected.
func httpchk(l *lines, o Object) error {
	p, _ := o["httpchk_params"].(map[string]any)
	method, err := enumOf(p, "method", "GET")
	if err != nil || len(p) != 2 {
		return notRenderable("httpchk_params %v", p)
	}
	uri, _ := p["uri"].(string)
	if !model.ValidCheckPath(uri) {
		return notRenderable("httpchk uri %q", uri)
	}
	rules, _ := o["http_check_list"].([]any)
	if len(rules) != 1 {
		return notRenderable("http_check_list %v", o["http_check_list"])
	}
	r, _ := rules[0].(map[string]any)
	if len(r) != 3 || r["type"] != "expect" || r["match"] != "status" || r["pattern"] != "200" {
		return notRenderable("http check %v", r)
	}
	l.add("option httpchk", method, uri)
	l.add("http-check expect status 200")
	return nil
}
