package dataplaneapi

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The raw path: the whole haproxy.cfg read as text (GET .../raw), the
// driver's sections replaced in it, and written back in one request
// (POST .../raw?version=V, with skip_reload=true when what HAProxy runs
// already matches). Measured against the real API v3.4.0 at 1,000
// backends: 0.45 s for the whole file, less than one server PUT outside a
// transaction (0.6 s), where a transaction pays 30 ms per section written.
// So a change of many sections (the initial sync, a burst) and the
// background writes of many slots go this way.
//
// Nothing a user writes reaches the text unchecked: every section is
// rendered here from the driver's own objects, field by field, each value
// checked against a strict grammar (names of letters, digits and ._:-,
// addresses parsed as IP addresses, numbers as numbers, enums from fixed
// lists, source ranges parsed as prefixes). An object with a field or
// value outside it is not rendered (errNotRenderable) and goes through
// the JSON endpoints instead, which the API escapes itself.

var errNotRenderable = errors.New("dataplaneapi: not renderable as haproxy.cfg text")

// token is a name HAProxy reads as one word and nothing else.
var wordRe = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,200}$`)

func notRenderable(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errNotRenderable, fmt.Sprintf(format, a...))
}

func tokenOf(o Object, k string) (string, error) {
	s, ok := o[k].(string)
	if !ok || !wordRe.MatchString(s) {
		return "", notRenderable("%s %v", k, o[k])
	}
	return s, nil
}

func uintOf(o Object, k string) (string, error) {
	n, ok := toInt(o[k])
	if !ok || n < 0 {
		return "", notRenderable("%s %v", k, o[k])
	}
	return strconv.FormatInt(n, 10), nil
}

func enumOf(o Object, k string, allowed ...string) (string, error) {
	s, ok := o[k].(string)
	if !ok || !slices.Contains(allowed, s) {
		return "", notRenderable("%s %v", k, o[k])
	}
	return s, nil
}

// addrPortOf is an address and port as HAProxy reads them: a.b.c.d:p,
// [v6]:p, or *:p for every address (binds).
func addrPortOf(o Object, star bool) (string, error) {
	addr, _ := o["address"].(string)
	if _, has := o["port"]; !has && !star {
		// A server of the model.NodesBackend: an address alone.
		a, err := netip.ParseAddr(addr)
		if err != nil || a.Zone() != "" {
			return "", notRenderable("address %q", addr)
		}
		return a.String(), nil
	}
	port, ok := toInt(o["port"])
	if !ok || port < 1 || port > 65535 {
		return "", notRenderable("port %v", o["port"])
	}
	if star && addr == "*" {
		return "*:" + strconv.FormatInt(port, 10), nil
	}
	a, err := netip.ParseAddr(addr)
	if err != nil || a.Zone() != "" {
		return "", notRenderable("address %q", addr)
	}
	return netip.AddrPortFrom(a, uint16(port)).String(), nil
}

// lines collects a section's lines; the first error sticks.
type lines struct {
	out []string
	err error
}

func (l *lines) add(parts ...string) {
	l.out = append(l.out, "  "+strings.Join(parts, " "))
}

func (l *lines) fail(err error) {
	if l.err == nil && err != nil {
		l.err = err
	}
}

// sectionText renders a frontend or backend with its binds or servers.
func sectionText(kind string, s *section) ([]string, error) {
	var l lines
	name, err := tokenOf(s.base, "name")
	if err != nil {
		return nil, err
	}
	head := kind + " " + name
	if _, ok := s.base["from"]; ok {
		from, err := tokenOf(s.base, "from")
		l.fail(err)
		head += " from " + from
	}
	l.out = append(l.out, head)
	for _, k := range slices.Sorted(maps.Keys(s.base)) {
		if k == "name" || k == "from" {
			continue
		}
		if kind == "frontend" {
			frontendField(&l, s.base, k)
		} else {
			backendField(&l, s.base, k)
		}
	}
	for _, c := range s.children {
		if kind == "frontend" {
			l.fail(bindLine(&l, c))
		} else {
			l.fail(serverLine(&l, c))
		}
	}
	if l.err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, name, l.err)
	}
	return l.out, nil
}

func frontendField(l *lines, o Object, k string) {
	switch k {
	case "mode":
		v, err := enumOf(o, k, "tcp", "http")
		l.fail(err)
		l.add("mode", v)
	case "maxconn":
		v, err := uintOf(o, k)
		l.fail(err)
		l.add("maxconn", v)
	case "client_timeout":
		v, err := uintOf(o, k)
		l.fail(err)
		l.add("timeout client", v)
	case "default_backend":
		v, err := tokenOf(o, k)
		l.fail(err)
		l.add("default_backend", v)
	case "tcp_request_rule_list":
		rules, ok := o[k].([]any)
		if !ok {
			l.fail(notRenderable("%s", k))
			return
		}
		for _, r := range rules {
			line, err := sourceRuleLine(r)
			l.fail(err)
			l.add(line)
		}
	default:
		l.fail(notRenderable("frontend field %s", k))
	}
}

// sourceRuleLine renders the one kind of tcp-request rule the driver
// writes: reject unless the client is in the ranges of its family
// (sourceCondition: files at checked paths, or parsed prefixes).
func sourceRuleLine(r any) (string, error) {
	o, ok := r.(map[string]any)
	if !ok || len(o) != 4 || o["action"] != "reject" || o["cond"] != "unless" {
		return "", notRenderable("tcp-request rule %v", r)
	}
	typ, err := enumOf(o, "type", "connection", "content")
	if err != nil {
		return "", err
	}
	test, _ := o["cond_test"].(string)
	cond, ok := sourceCondition(test)
	if !ok {
		return "", notRenderable("cond_test %q", test)
	}
	return "tcp-request " + typ + " reject unless " + cond, nil
}

func bindLine(l *lines, o Object) error {
	name, err := tokenOf(o, "name")
	if s, _ := o["name"].(string); err != nil {
		// An IPv6 bind is named [ADDR]:PORT: a parsed address, printed back.
		if ap, perr := netip.ParseAddrPort(s); perr == nil && ap.String() == s && ap.Addr().Zone() == "" {
			name, err = s, nil
		}
	}
	if err != nil {
		return err
	}
	ap, err := addrPortOf(o, true)
	if err != nil {
		return err
	}
	parts := []string{"bind", ap, "name", name}
	for _, k := range slices.Sorted(maps.Keys(o)) {
		switch k {
		case "name", "address", "port":
		case "accept_proxy", "transparent":
			b, ok := o[k].(bool)
			if !ok {
				return notRenderable("bind %s %v", k, o[k])
			}
			if b {
				parts = append(parts, strings.ReplaceAll(k, "_", "-"))
			}
		default:
			return notRenderable("bind field %s", k)
		}
	}
	l.add(parts...)
	return nil
}

// editRaw replaces sections of text: each key of blocks ("backend NAME",
// "frontend NAME") is replaced by its lines, or deleted when they are nil;
// keys not found are appended, in order. Everything else stays as it is
// (the API reformats the file anyway).
func editRaw(text string, blocks map[string][]string, order []string) string {
	var out strings.Builder
	out.Grow(len(text) + 64*len(blocks))
	done := make(map[string]bool, len(blocks))
	skip := false
	for line := range strings.Lines(text) {
		if header(line) {
			f := strings.Fields(line)
			key := ""
			if len(f) >= 2 {
				key = f[0] + " " + f[1]
			}
			repl, ok := blocks[key]
			skip = ok
			if ok && !done[key] {
				done[key] = true
				writeBlock(&out, repl)
			}
		}
		if !skip {
			out.WriteString(line)
			if !strings.HasSuffix(line, "\n") {
				out.WriteByte('\n')
			}
		}
	}
	for _, key := range order {
		if !done[key] && blocks[key] != nil {
			out.WriteByte('\n')
			writeBlock(&out, blocks[key])
		}
	}
	return out.String()
}

// header reports whether a line starts a section: not indented, not a
// comment, not empty.
func header(line string) bool {
	return line != "" && line[0] != ' ' && line[0] != '\t' && line[0] != '#' && strings.TrimSpace(line) != ""
}

func writeBlock(out *strings.Builder, ls []string) {
	if ls == nil {
		return
	}
	for _, l := range ls {
		out.WriteString(l)
		out.WriteByte('\n')
	}
	out.WriteByte('\n')
}
