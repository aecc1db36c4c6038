package dataplanetest

import (
	"fmt"
	"regexp"
	"slices"
)

// A field of a schema, as the public v3 specification defines it. Only the
// schemas of the objects the driver writes are modelled; like the real
// API, fields a schema does not list are accepted and ignored.
type field struct {
	kind    string // "string", "enum", "int", "bool", "object"
	enum    []string
	pattern *regexp.Regexp
	min     int64
	max     int64 // 0: no maximum
	nested  map[string]field
}

var (
	noSpace  = regexp.MustCompile(`^[^\s]+$`)
	sectName = regexp.MustCompile(`^[A-Za-z0-9-_.:]+$`)
	onOff    = field{kind: "enum", enum: []string{"enabled", "disabled"}}
	duration = field{kind: "int", min: 0}
	nullInt  = field{kind: "int", min: -1 << 62}
)

// serverParams is the part of server_params the driver may send.
var serverParams = map[string]field{
	"maintenance": onOff, "check": onOff, "check-send-proxy": onOff, "send-proxy": onOff,
	"send-proxy-v2": onOff, "agent-check": onOff, "backup": onOff,
	"inter": duration, "fastinter": duration, "downinter": duration,
	"rise": nullInt, "fall": nullInt, "weight": nullInt, "maxconn": nullInt,
	"init-state": {kind: "enum", enum: []string{"fully-up", "up", "down", "fully-down"}},
	// A server following another's state (HAProxy's track: BACKEND/SERVER,
	// or SERVER of the same backend), and an agent check (the driver's
	// _nodes backend: an agent that never answers, so that its servers
	// may be tracked). health_check_port is the keyword port (the check's).
	"track": {kind: "string", pattern: noSpace}, "agent-addr": {kind: "string", pattern: noSpace},
	"agent-port": {kind: "int", min: 1, max: 65535}, "agent-inter": duration,
	"health_check_port": {kind: "int", min: 1, max: 65535},
}

var schemas = map[string]struct {
	required []string
	fields   map[string]field
}{
	"server": {[]string{"name", "address"}, merge(serverParams, map[string]field{
		"name":    {kind: "string", pattern: noSpace},
		"address": {kind: "string", pattern: noSpace},
		"port":    {kind: "int", min: 1, max: 65535},
		"id":      nullInt,
	})},
	"backend": {[]string{"name"}, map[string]field{
		"name": {kind: "string", pattern: sectName},
		"from": {kind: "string", pattern: sectName},
		"mode": {kind: "enum", enum: []string{"http", "tcp", "log"}},
		"balance": {kind: "object", nested: map[string]field{
			"algorithm": {kind: "enum", enum: []string{"first", "hash", "hdr", "leastconn", "random", "rdp-cookie", "roundrobin", "source", "static-rr", "uri", "url_param"}},
		}},
		"hash_type": {kind: "object", nested: map[string]field{
			"method":   {kind: "enum", enum: []string{"map-based", "consistent"}},
			"function": {kind: "enum", enum: []string{"sdbm", "djb2", "wt6", "crc32", "none"}},
		}},
		"adv_check":      {kind: "enum", enum: []string{"httpchk", "ldap-check", "mysql-check", "pgsql-check", "redis-check", "smtpchk", "ssl-hello-chk", "tcp-check"}},
		"default_server": {kind: "object", nested: serverParams},
		"httpchk_params": {kind: "object", nested: map[string]field{
			"method": {kind: "enum", enum: []string{"HEAD", "PUT", "POST", "GET", "TRACE", "PATCH", "DELETE", "CONNECT", "OPTIONS"}},
			"uri":    {kind: "string", pattern: noSpace},
		}},
		"connect_timeout": duration,
		"server_timeout":  duration,
	}},
	"frontend": {[]string{"name"}, map[string]field{
		"name":            {kind: "string", pattern: sectName},
		"from":            {kind: "string", pattern: sectName},
		"mode":            {kind: "enum", enum: []string{"http", "tcp"}},
		"default_backend": {kind: "string", pattern: sectName},
		"maxconn":         nullInt,
		"client_timeout":  duration,
	}},
	"server_template": {[]string{"prefix", "num_or_range", "fqdn"}, merge(serverParams, map[string]field{
		"prefix":       {kind: "string", pattern: noSpace},
		"num_or_range": {kind: "string"},
		"fqdn":         {kind: "string"},
		"port":         {kind: "int", min: 1, max: 65535},
	})},
	"bind": {[]string{"name"}, map[string]field{
		"name":         {kind: "string", pattern: noSpace},
		"address":      {kind: "string", pattern: noSpace},
		"port":         {kind: "int", min: 1, max: 65535},
		"accept_proxy": {kind: "bool"},
	}},
}

func merge(a, b map[string]field) map[string]field {
	out := map[string]field{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// validate checks o against the named schema: the 422 of the real API.
func validate(schema string, o Object) error {
	s := schemas[schema]
	for _, r := range s.required {
		if _, ok := o[r]; !ok {
			return fmt.Errorf("validation failure list:\n%s in body is required", r)
		}
	}
	return checkFields(s.fields, o, "")
}

func checkFields(fields map[string]field, o Object, prefix string) error {
	for k, v := range o {
		f, ok := fields[k]
		if !ok || v == nil {
			continue
		}
		name := prefix + k
		bad := func(why string) error {
			return fmt.Errorf("validation failure list:\n%s in body %s", name, why)
		}
		switch f.kind {
		case "string":
			s, ok := v.(string)
			if !ok {
				return bad("must be of type string")
			}
			if f.pattern != nil && !f.pattern.MatchString(s) {
				return bad("should match '" + f.pattern.String() + "'")
			}
		case "enum":
			s, ok := v.(string)
			if !ok || !slices.Contains(f.enum, s) {
				return bad(fmt.Sprintf("should be one of %v", f.enum))
			}
		case "bool":
			if _, ok := v.(bool); !ok {
				return bad("must be of type boolean")
			}
		case "int":
			n, ok := toInt(v)
			if !ok {
				return bad("must be of type integer")
			}
			if n < f.min {
				return bad(fmt.Sprintf("should be greater than or equal to %d", f.min))
			}
			if f.max > 0 && n > f.max {
				return bad(fmt.Sprintf("should be less than or equal to %d", f.max))
			}
		case "object":
			m, ok := v.(map[string]any)
			if !ok {
				return bad("must be of type object")
			}
			if err := checkFields(f.nested, m, name+"."); err != nil {
				return err
			}
		}
	}
	return nil
}
