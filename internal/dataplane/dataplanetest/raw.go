package dataplanetest

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// The raw configuration (GET/POST /v3/services/haproxy/configuration/raw):
// the whole haproxy.cfg as text. Measured against the real API v3.4.0:
// GET answers text/plain with a Configuration-Version header; POST takes
// the whole file against ?version= (409 when stale), parses and validates
// it (400 "validation error: ..." naming an unknown keyword), bumps the
// version, and either reloads (202, Reload-Id) or, with skip_reload=true,
// only writes it (201; what HAProxy runs does not change). The API reads
// the text into the same objects its JSON endpoints serve, which this
// server models for the directives below; any other directive in a
// frontend or backend is refused here (an honest "not modelled", where the
// real API might accept it). Sections other than frontends and backends
// (global, defaults, userlist, ...) are kept as text.

func (s *Server) rawEndpoint(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Configuration-Version", strconv.FormatInt(s.version, 10))
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, s.renderRaw(s.cfg))
	case http.MethodPost:
		s.postRaw(w, r)
	default:
		s.fail(w, errf(http.StatusMethodNotAllowed, "method not allowed"))
	}
}

func (s *Server) postRaw(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v, err := strconv.ParseInt(q.Get("version"), 10, 64)
	if err != nil {
		s.fail(w, errf(http.StatusBadRequest, "version not specified"))
		return
	}
	if v != s.version {
		s.fail(w, errf(http.StatusConflict, "version mismatch: version in configuration file is %d, given version is %d", s.version, v))
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		s.fail(w, errf(http.StatusBadRequest, "reading the body: %v", err))
		return
	}
	next, other, perr := parseRaw(string(data))
	if perr == nil {
		perr = s.check(next)
	}
	if perr != nil {
		s.fail(w, errf(http.StatusBadRequest, "validation error: %v", perr))
		return
	}
	s.cfg, s.other = next, other
	s.version++
	if q.Get("skip_reload") == "true" {
		s.replyText(w, http.StatusCreated, s.renderRaw(s.cfg))
		return
	}
	w.Header().Set("Reload-Id", s.scheduleReload())
	s.replyText(w, http.StatusAccepted, s.renderRaw(s.cfg))
}

func (s *Server) replyText(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Configuration-Version", strconv.FormatInt(s.version, 10))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, text)
}

// defaultOther is what the API's haproxy.cfg holds besides proxies when
// nothing else was posted.
const defaultOther = "global\n  maxconn 4000\n\ndefaults unnamed_defaults_1\n  mode tcp\n  timeout connect 5s\n  timeout client 1m\n  timeout server 1m\n"

func (s *Server) renderRaw(c *config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# _version=%d\n\n", s.version)
	other := s.other
	if other == "" {
		other = defaultOther
	}
	b.WriteString(strings.TrimRight(other, "\n") + "\n")
	for _, name := range c.frontends.names {
		b.WriteString("\n" + proxyLine("frontend", c.frontends.m[name]))
		renderFields(&b, c.frontends.m[name])
		for _, bd := range c.binds[name].all() {
			fmt.Fprintf(&b, "  bind %s name %v%s\n", hostPort(bd), bd["name"], flags(bd, "accept_proxy", "accept-proxy", "transparent", "transparent"))
		}
	}
	for _, name := range c.backends.names {
		b.WriteString("\n" + proxyLine("backend", c.backends.m[name]))
		renderFields(&b, c.backends.m[name])
		for _, t := range c.templates[name] {
			fmt.Fprintf(&b, "  server-template %v %v %v:%v%s\n", t["prefix"], t["num_or_range"], t["fqdn"], t["port"], serverWords(t))
		}
		for _, sv := range c.servers[name].all() {
			fmt.Fprintf(&b, "  server %v %s%s\n", sv["name"], hostPort(sv), serverWords(sv))
		}
	}
	return b.String()
}

func proxyLine(kind string, o Object) string {
	if f, ok := o["from"].(string); ok {
		return fmt.Sprintf("%s %v from %s\n", kind, o["name"], f)
	}
	return fmt.Sprintf("%s %v\n", kind, o["name"])
}

func hostPort(o Object) string {
	addr, _ := o["address"].(string)
	port, ok := toInt(o["port"])
	if !ok {
		return addr // a server without a port (the real API writes none)
	}
	if a, err := netip.ParseAddr(addr); err == nil {
		return netip.AddrPortFrom(a, uint16(port)).String()
	}
	return fmt.Sprintf("%s:%d", addr, port)
}

func flags(o Object, kv ...string) string {
	out := ""
	for i := 0; i < len(kv); i += 2 {
		if o[kv[i]] == true {
			out += " " + kv[i+1]
		}
	}
	return out
}

// serverParamWords are the server keywords modelled, JSON key → keyword.
var onOffWords = map[string]string{"check": "check", "send-proxy-v2": "send-proxy-v2", "check-send-proxy": "check-send-proxy",
	"send-proxy": "send-proxy", "maintenance": "disabled", "backup": "backup", "agent-check": "agent-check"}

// numWords maps a numeric keyword to its JSON key (port: the check's).
var numWords = map[string]string{"inter": "inter", "rise": "rise", "fall": "fall", "weight": "weight", "maxconn": "maxconn",
	"agent-port": "agent-port", "agent-inter": "agent-inter", "port": "health_check_port"}

func serverWords(o Object) string {
	var out string
	for _, k := range slices.Sorted(maps.Keys(o)) {
		if w, ok := onOffWords[k]; ok && o[k] == "enabled" {
			out += " " + w
		} else if k == "track" || k == "agent-addr" {
			out += fmt.Sprintf(" %s %v", k, o[k])
		} else if k == "health_check_port" {
			out += fmt.Sprintf(" port %v", o[k])
		} else if numWords[k] == k {
			out += fmt.Sprintf(" %s %v", k, o[k])
		}
	}
	return out
}

func renderFields(b *strings.Builder, o Object) {
	for _, k := range slices.Sorted(maps.Keys(o)) {
		v := o[k]
		switch k {
		case "mode", "maxconn", "default_backend":
			fmt.Fprintf(b, "  %s %v\n", k, v)
		case "client_timeout", "connect_timeout", "server_timeout":
			fmt.Fprintf(b, "  timeout %s %v\n", strings.TrimSuffix(k, "_timeout"), v)
		case "balance":
			fmt.Fprintf(b, "  balance %v\n", v.(map[string]any)["algorithm"])
		case "hash_type":
			fmt.Fprintf(b, "  hash-type %v\n", v.(map[string]any)["method"])
		case "adv_check":
			if p, ok := o["httpchk_params"].(map[string]any); ok && v == "httpchk" {
				fmt.Fprintf(b, "  option httpchk %v %v\n", p["method"], p["uri"])
			} else {
				fmt.Fprintf(b, "  option %v\n", v)
			}
		case "default_server":
			fmt.Fprintf(b, "  default-server%s\n", serverWords(v.(map[string]any)))
		case "stick_table":
			m := v.(map[string]any)
			fmt.Fprintf(b, "  stick-table type %v size %v expire %v\n", m["type"], m["size"], m["expire"])
		case "http_check_list":
			for _, r := range v.([]any) {
				m := r.(map[string]any)
				fmt.Fprintf(b, "  http-check %v %v %v\n", m["type"], m["match"], m["pattern"])
			}
		case "stick_rule_list", "tcp_request_rule_list":
			for _, r := range v.([]any) {
				m := r.(map[string]any)
				if k == "stick_rule_list" {
					fmt.Fprintf(b, "  stick %v %v\n", m["type"], m["pattern"])
				} else {
					fmt.Fprintf(b, "  tcp-request %v %v %v %v\n", m["type"], m["action"], m["cond"], m["cond_test"])
				}
			}
		}
	}
}
