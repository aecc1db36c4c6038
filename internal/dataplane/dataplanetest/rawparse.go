package dataplanetest

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// parseRaw reads a haproxy.cfg: its frontends and backends into a config,
// the other sections kept as text.
func parseRaw(text string) (*config, string, error) {
	c := newConfig()
	var other strings.Builder
	var cur Object
	kind := ""
	for n, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			kind, cur = f[0], nil
			if kind != "frontend" && kind != "backend" {
				other.WriteString("\n" + strings.TrimSpace(line) + "\n")
				continue
			}
			if len(f) != 2 && !(len(f) == 4 && f[2] == "from") {
				return nil, "", fmt.Errorf("line %d: %q", n+1, line)
			}
			cur = Object{"name": f[1]}
			if len(f) == 4 {
				cur["from"] = f[3]
			}
			if kind == "frontend" {
				c.frontends.put(f[1], cur)
				c.binds[f[1]] = newList()
			} else {
				c.backends.put(f[1], cur)
				c.servers[f[1]] = newList()
			}
			continue
		}
		if cur == nil {
			other.WriteString("  " + strings.Join(f, " ") + "\n")
			continue
		}
		if err := parseLine(c, kind, cur, f); err != nil {
			return nil, "", fmt.Errorf("config parsing [haproxy.cfg:%d] %v in '%s' section", n+1, err, kind)
		}
	}
	return c, strings.TrimLeft(other.String(), "\n"), nil
}

func parseLine(c *config, kind string, o Object, f []string) error {
	name := o["name"].(string)
	unknown := fmt.Errorf("unknown keyword '%s'", f[0])
	switch {
	case f[0] == "mode" && len(f) == 2:
		o["mode"] = f[1]
	case f[0] == "maxconn" && len(f) == 2 && kind == "frontend":
		return setInt(o, "maxconn", f[1], false)
	case f[0] == "default_backend" && len(f) == 2 && kind == "frontend":
		o["default_backend"] = f[1]
	case f[0] == "timeout" && len(f) == 3:
		k := map[string]string{"client": "client_timeout", "connect": "connect_timeout", "server": "server_timeout"}[f[1]]
		if k == "" {
			return unknown
		}
		return setInt(o, k, f[2], true)
	case f[0] == "bind" && kind == "frontend" && len(f) >= 2:
		return parseBind(c.binds[name], f)
	case f[0] == "tcp-request" && kind == "frontend" && len(f) >= 5:
		rule := map[string]any{"type": f[1], "action": f[2], "cond": f[3], "cond_test": strings.Join(f[4:], " ")}
		l, _ := o["tcp_request_rule_list"].([]any)
		o["tcp_request_rule_list"] = append(l, rule)
	case f[0] == "balance" && len(f) == 2 && kind == "backend":
		o["balance"] = map[string]any{"algorithm": f[1]}
	case f[0] == "hash-type" && len(f) == 2 && kind == "backend":
		o["hash_type"] = map[string]any{"method": f[1]}
	case f[0] == "option" && len(f) == 2 && f[1] == "tcp-check" && kind == "backend":
		o["adv_check"] = "tcp-check"
	case f[0] == "option" && len(f) == 4 && f[1] == "httpchk" && kind == "backend":
		o["adv_check"] = "httpchk"
		o["httpchk_params"] = map[string]any{"method": f[2], "uri": f[3]}
	case f[0] == "http-check" && len(f) == 4 && f[1] == "expect" && kind == "backend":
		l, _ := o["http_check_list"].([]any)
		o["http_check_list"] = append(l, map[string]any{"type": "expect", "match": f[2], "pattern": f[3]})
	case f[0] == "stick-table" && len(f) == 7 && f[1] == "type" && f[3] == "size" && f[5] == "expire":
		t := map[string]any{"type": f[2]}
		if err := setInt(t, "size", f[4], false); err != nil {
			return err
		}
		if err := setInt(t, "expire", f[6], true); err != nil {
			return err
		}
		o["stick_table"] = t
	case f[0] == "stick" && len(f) == 3:
		l, _ := o["stick_rule_list"].([]any)
		o["stick_rule_list"] = append(l, map[string]any{"type": f[1], "pattern": f[2]})
	case f[0] == "default-server" && kind == "backend":
		ds := map[string]any{}
		if err := parseServerParams(ds, f[1:]); err != nil {
			return err
		}
		o["default_server"] = ds
	case f[0] == "server" && len(f) >= 3 && kind == "backend":
		sv := Object{"name": f[1]}
		if err := splitHostPort(sv, f[2]); err != nil {
			return err
		}
		if err := parseServerParams(sv, f[3:]); err != nil {
			return err
		}
		c.servers[name].put(f[1], sv)
	case f[0] == "server-template" && len(f) >= 4 && kind == "backend":
		t := Object{"prefix": f[1], "num_or_range": f[2]}
		if err := splitHostPort(t, f[3]); err != nil {
			return err
		}
		t["fqdn"] = t["address"]
		delete(t, "address")
		if err := parseServerParams(t, f[4:]); err != nil {
			return err
		}
		c.templates[name] = append(c.templates[name], t)
	default:
		return unknown
	}
	return nil
}

func parseBind(binds *list, f []string) error {
	b := Object{}
	if err := splitHostPort(b, f[1]); err != nil {
		return err
	}
	b["name"] = f[1]
	for i := 2; i < len(f); i++ {
		switch f[i] {
		case "name":
			if i+1 >= len(f) {
				return fmt.Errorf("'bind' : missing name")
			}
			b["name"] = f[i+1]
			i++
		case "accept-proxy":
			b["accept_proxy"] = true
		case "transparent":
			b["transparent"] = true
		default:
			return fmt.Errorf("'bind' : unknown keyword '%s'", f[i])
		}
	}
	binds.put(b["name"].(string), b)
	return nil
}

func splitHostPort(o Object, s string) error {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		o["address"], o["port"] = ap.Addr().String(), int64(ap.Port())
		return nil
	}
	i := strings.LastIndex(s, ":")
	if _, err := netip.ParseAddr(s); err == nil || i < 0 {
		o["address"] = s
		return nil
	}
	p, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("invalid address '%s'", s)
	}
	o["address"], o["port"] = s[:i], p
	if s[:i] == "" {
		o["address"] = "*"
	}
	return nil
}

func parseServerParams(o map[string]any, words []string) error {
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "disabled" {
			o["maintenance"] = "enabled"
			continue
		}
		if _, ok := onOffWords[w]; ok {
			o[w] = "enabled"
			continue
		}
		if k, ok := numWords[w]; ok && i+1 < len(words) {
			if err := setInt(o, k, words[i+1], w == "inter" || w == "agent-inter"); err != nil {
				return err
			}
			i++
			continue
		}
		if (w == "track" || w == "agent-addr") && i+1 < len(words) {
			o[w] = words[i+1]
			i++
			continue
		}
		return fmt.Errorf("'server' : unknown keyword '%s'", w)
	}
	return nil
}

// setInt sets o[k] from a number, a time (ms, s, m, h, d; ms without a
// unit) when time, or a size (k, m, g) otherwise.
func setInt(o map[string]any, k, v string, time bool) error {
	mult := int64(1)
	units := map[string]int64{"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
	if time {
		units = map[string]int64{"ms": 1, "s": 1000, "m": 60000, "h": 3600000, "d": 86400000}
	}
	num := strings.TrimRight(v, "abcdefghijklmnopqrstuvwxyz")
	if u := v[len(num):]; u != "" {
		m, ok := units[u]
		if !ok {
			return fmt.Errorf("'%s' : invalid value '%s'", k, v)
		}
		mult = m
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("'%s' : invalid value '%s'", k, v)
	}
	o[k] = n * mult
	return nil
}

// misread is a frontend as the real API v3.4.0 reads it back: a
// "tcp-request session reject" rule comes back as action "accept"
// (measured; HAProxy itself rejects). Writing such a read back would open
// the frontend, which is why the driver never writes session rules.
func misread(o Object) Object {
	rules, _ := o["tcp_request_rule_list"].([]any)
	for i, r := range rules {
		if m, _ := r.(map[string]any); m["type"] == "session" && m["action"] == "reject" {
			o = maps.Clone(o)
			rules = slices.Clone(rules)
			o["tcp_request_rule_list"] = rules
			m = maps.Clone(m)
			m["action"] = "accept"
			rules[i] = m
		}
	}
	return o
}
