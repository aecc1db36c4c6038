package dataplanetest

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The general file storage (/storage/general) and the running worker's
// ACLs (/runtime/acls), as the real API v3.4.0 with HAProxy 2.6.12 does
// them (measured):
//
//   - POST /storage/general, multipart with the file in the part
//     file_upload, named by its filename: 201 {description, file, size,
//     storage_name}, the file at GeneralStorageDir/NAME; 409 when it
//     exists. NAME is the filename with every character before the
//     extension but [A-Za-z0-9_-] (and a backslash) replaced by "_"
//     (client-native's SanitizeFilename: a.ipv4.acl is stored and listed
//     as a_ipv4.acl), and so is the NAME of every request below. PUT /storage/general/NAME, multipart: 404 when missing, 204
//     with skip_reload=true, else 202 and a reload; a text/plain body 415.
//     DELETE: 204, 404, or 409 while haproxy.cfg names the file. GET of one: its content (406 unless the client
//     accepts application/octet-stream or application/json). None of them
//     changes the configuration version.
//   - HAProxy loads a rule's "{ src -f PATH }" file when it starts or
//     reloads; a configuration naming a file that does not exist fails
//     `haproxy -c` ("failed to open pattern file"). GET /runtime/acls lists
//     the worker's ACLs in the order of haproxy.cfg: per such test the
//     file's (storage_name: its path) and an empty inline "src" one, per
//     inline "{ src P... }" test one "src"; then two of HAProxy's own.
//     GET /runtime/acls/ID/entries: by id only, 404 when it has no entry.
//     PUT /runtime/acls/FILE/entries (FILE the path, escaped; an id is
//     refused with 400 "Unknown ACL identifier"): every entry replaced at
//     once, 201 echoing the body; a value that is not an address or
//     prefix is a 400 and changes nothing. No reload, and the file on disk
//     is not written: a reload loads it again.

// GeneralStorageDir is where the test server says it stores general files.
const GeneralStorageDir = "/etc/haproxy/general"

// aclState is the storage and the running worker's ACLs.
type aclState struct {
	files   map[string]string // storage name → content
	running []*rtACL
}

type rtACL struct {
	storage string   // file path, or "src" / "var"
	entries []string // values
	line    int
}

var parentRe = `^[^\r\n<>*;$#&{}"]+$`

func validParent(s string) bool {
	return s != "" && !strings.ContainsAny(s, "\r\n<>*;$#&{}\"")
}

// aclEndpoint serves /storage/general... and /runtime/acls...; it reports
// whether the path was one of them.
func (s *Server) aclEndpoint(w http.ResponseWriter, r *http.Request) bool {
	p, _ := strings.CutPrefix(r.URL.EscapedPath(), "/v3/services/haproxy/")
	seg := strings.Split(strings.Trim(p, "/"), "/")
	for i := range seg {
		seg[i], _ = url.PathUnescape(seg[i])
	}
	switch {
	case len(seg) >= 2 && seg[0] == "storage" && seg[1] == "general":
		s.storageEndpoint(w, r, seg[2:])
	case len(seg) >= 2 && seg[0] == "runtime" && seg[1] == "acls":
		s.runtimeACLs(w, r, seg[2:])
	default:
		return false
	}
	return true
}

func fileObject(name, content string, size bool) map[string]any {
	o := map[string]any{"description": "managed general use file", "file": GeneralStorageDir + "/" + name, "storage_name": name}
	if size {
		o["size"] = len(content)
	}
	return o
}

func (s *Server) storageEndpoint(w http.ResponseWriter, r *http.Request, seg []string) {
	if s.acl.files == nil {
		s.acl.files = map[string]string{}
	}
	switch {
	case len(seg) == 0 && r.Method == http.MethodGet:
		out := []map[string]any{}
		for _, name := range slices.Sorted(maps.Keys(s.acl.files)) {
			out = append(out, fileObject(name, "", false))
		}
		s.reply(w, http.StatusOK, out)
	case len(seg) == 0 && r.Method == http.MethodPost:
		name, content, e := uploaded(r)
		if e != nil {
			s.fail(w, e)
			return
		}
		name = storedName(name)
		if _, ok := s.acl.files[name]; ok {
			s.fail(w, errf(http.StatusConflict, "object already exists: file %s/%s already exists", GeneralStorageDir, name))
			return
		}
		s.acl.files[name] = content
		s.reply(w, http.StatusCreated, fileObject(name, content, true))
	case len(seg) == 1:
		name := storedName(seg[0])
		content, ok := s.acl.files[name]
		if !ok {
			s.fail(w, errf(http.StatusNotFound, "missing object: file %s doesn't exist in dir: %s", name, GeneralStorageDir))
			return
		}
		switch r.Method {
		case http.MethodGet:
			if a := r.Header.Get("Accept"); a != "" && !strings.Contains(a, "application/octet-stream") && !strings.Contains(a, "application/json") && !strings.Contains(a, "*/*") {
				s.fail(w, errf(http.StatusNotAcceptable, "unsupported media type requested, only [application/json application/octet-stream] are available"))
				return
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Configuration-Version", strconv.FormatInt(s.version, 10))
			_, _ = io.WriteString(w, content)
		case http.MethodPut:
			_, body, e := uploaded(r)
			if e != nil {
				s.fail(w, e)
				return
			}
			s.acl.files[name] = body
			if r.URL.Query().Get("skip_reload") == "true" {
				s.reply(w, http.StatusNoContent, nil)
				return
			}
			w.Header().Set("Reload-Id", s.scheduleReload())
			s.reply(w, http.StatusAccepted, nil)
		case http.MethodDelete:
			if fe, rule := s.referencing(GeneralStorageDir + "/" + name); fe != "" {
				s.fail(w, errf(http.StatusConflict, "rejecting attempt to delete file %s/%s referenced in haproxy conf at line 1: %s", GeneralStorageDir, name, rule))
				return
			}
			delete(s.acl.files, name)
			s.reply(w, http.StatusNoContent, nil)
		default:
			s.fail(w, errf(http.StatusMethodNotAllowed, "method not allowed"))
		}
	default:
		s.fail(w, errf(http.StatusNotFound, "path %s was not found", r.URL.Path))
	}
}

// unsafeName is what the API replaces in a general file's name.
var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_\\-]+`)

// storedName is the name the API stores a general file under, as
// client-native v6.4.0's misc.SanitizeFilename makes it.
func storedName(name string) string {
	ext := filepath.Ext(name)
	base := name[:len(name)-len(ext)]
	if base != "" {
		base = filepath.Clean(base)
	}
	base = unsafeName.ReplaceAllString(base, "_")
	if ext == "" {
		return base
	}
	ext = unsafeName.ReplaceAllString(ext[1:], "_")
	if base == "" {
		return "_" + ext
	}
	return base + "." + ext
}

// uploaded reads the multipart part file_upload: its filename and content.
func uploaded(r *http.Request) (string, string, *apiErr) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		return "", "", errf(http.StatusUnsupportedMediaType, "unsupported media type %q", r.Header.Get("Content-Type"))
	}
	f, h, err := r.FormFile("file_upload")
	if err != nil {
		return "", "", errf(http.StatusBadRequest, "file_upload: %v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return "", "", errf(http.StatusBadRequest, "file_upload: %v", err)
	}
	return h.Filename, string(b), nil
}

func (s *Server) runtimeACLs(w http.ResponseWriter, r *http.Request, seg []string) {
	switch {
	case len(seg) == 0 && r.Method == http.MethodGet:
		out := []map[string]any{}
		for i, a := range s.acl.running {
			desc := fmt.Sprintf("acl '%s' file 'haproxy.cfg' line %d. curr_ver=0 next_ver=0 entry_cnt=%d", a.storage, a.line, len(a.entries))
			if strings.HasPrefix(a.storage, "/") {
				desc = fmt.Sprintf("pattern loaded from file '%s' used by acl at file 'haproxy.cfg' line %d. curr_ver=0 next_ver=0 entry_cnt=%d", a.storage, a.line, len(a.entries))
			}
			out = append(out, map[string]any{"id": strconv.Itoa(i), "storage_name": a.storage, "description": desc})
		}
		s.reply(w, http.StatusOK, out)
	case len(seg) == 2 && seg[1] == "entries" && !validParent(seg[0]):
		s.fail(w, errf(http.StatusBadRequest, "parent_name in path: string doesn't match the regular expression \"%s\"", parentRe))
	case len(seg) == 2 && seg[1] == "entries" && r.Method == http.MethodGet:
		i, err := strconv.Atoi(seg[0])
		if err != nil || i < 0 || i >= len(s.acl.running) || len(s.acl.running[i].entries) == 0 {
			s.fail(w, errf(http.StatusNotFound, "cannot retrieve ACL files entries for %s: not found", seg[0]))
			return
		}
		out := []map[string]any{}
		for j, v := range s.acl.running[i].entries {
			out = append(out, map[string]any{"id": fmt.Sprintf("0x%x", 0x55f4ba6b2460+16*j), "value": v})
		}
		s.reply(w, http.StatusOK, out)
	case len(seg) == 2 && seg[1] == "entries" && r.Method == http.MethodPut:
		var a *rtACL
		for _, x := range s.acl.running {
			if x.storage == seg[0] && strings.HasPrefix(seg[0], "/") {
				a = x
				break
			}
		}
		if a == nil {
			s.fail(w, errf(http.StatusBadRequest, "haproxy.sock [3]  Unknown ACL identifier. Please use #<id> or <file>. [prepare acl %s] general error", seg[0]))
			return
		}
		var body []struct {
			Value string `json:"value"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			s.fail(w, errf(http.StatusBadRequest, "parsing request body failed: %v", err))
			return
		}
		vals := make([]string, 0, len(body))
		for i, e := range body {
			if _, ok := pattern(e.Value); !ok {
				s.fail(w, errf(http.StatusBadRequest, "haproxy.sock [3]  '%s' is not a valid IPv4 or IPv6 address. [add acl @%d %s %s] general error",
					strings.Fields(e.Value + " x")[0], i+1, seg[0], e.Value))
				return
			}
			vals = append(vals, e.Value)
		}
		a.entries = vals
		s.reply(w, http.StatusCreated, body)
	default:
		s.fail(w, errf(http.StatusNotFound, "path %s was not found", r.URL.Path))
	}
}

// pattern parses an ACL entry of src: an address or a prefix.
func pattern(v string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(v); err == nil {
		return p, true
	}
	if a, err := netip.ParseAddr(v); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}

// patternFile is the entries of the stored file at path, or false when
// there is none or a line is not an address or prefix.
func (s *Server) patternFile(path string) ([]string, bool) {
	name, ok := strings.CutPrefix(path, GeneralStorageDir+"/")
	content, found := s.acl.files[name]
	if !ok || !found {
		return nil, false
	}
	var out []string
	for _, l := range strings.Split(content, "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if _, ok := pattern(l); !ok {
			return nil, false
		}
		out = append(out, l)
	}
	return out, true
}

// check is `haproxy -c` of c: as config.check, and every pattern file a
// rule names must exist.
func (s *Server) check(c *config) error {
	if err := c.check(); err != nil {
		return err
	}
	for _, fe := range c.frontends.names {
		rules, _ := c.frontends.m[fe]["tcp_request_rule_list"].([]any)
		for _, r := range rules {
			m, _ := r.(map[string]any)
			test, _ := m["cond_test"].(string)
			c, _ := parseSrcCond(test)
			for _, path := range c.files() {
				if _, ok := s.patternFile(path); !ok {
					return fmt.Errorf("'tcp-request %v reject' error detected in frontend '%s' while parsing '%v' condition failed to open pattern file <%s>", m["type"], fe, m["cond"], path)
				}
			}
		}
	}
	return nil
}

// referencing names a frontend of the API's configuration whose rule
// names the file at path, and the rule.
func (s *Server) referencing(path string) (string, string) {
	for _, fe := range s.cfg.frontends.names {
		rules, _ := s.cfg.frontends.m[fe]["tcp_request_rule_list"].([]any)
		for _, r := range rules {
			m, _ := r.(map[string]any)
			test, _ := m["cond_test"].(string)
			if c, _ := parseSrcCond(test); slices.Contains(c.files(), path) {
				return fe, fmt.Sprintf("tcp-request %v %v %v %s", m["type"], m["action"], m["cond"], test)
			}
		}
	}
	return "", ""
}

// loadACLs is a new worker loading the running configuration's ACLs.
func (s *Server) loadACLs() {
	s.acl.running = nil
	line := 0
	for _, fe := range s.running.frontends.names {
		rules, _ := s.running.frontends.m[fe]["tcp_request_rule_list"].([]any)
		for _, r := range rules {
			line++
			m, _ := r.(map[string]any)
			test, _ := m["cond_test"].(string)
			c, _ := parseSrcCond(test)
			for _, alt := range c {
				for _, t := range alt {
					if t.file != "" {
						entries, _ := s.patternFile(t.file)
						s.acl.running = append(s.acl.running, &rtACL{storage: t.file, entries: entries, line: line}, &rtACL{storage: "src", line: line})
					} else {
						s.acl.running = append(s.acl.running, &rtACL{storage: "src", entries: t.patterns, line: line})
					}
				}
			}
		}
	}
	s.acl.running = append(s.acl.running, &rtACL{storage: "var", entries: []string{"0"}}, &rtACL{storage: "var", entries: []string{"0"}})
}

// srcAllowed applies a frontend's source rules (reject if or unless a
// condition of source tests, srccond.go) to the client src, a file read
// as the running worker's ACLs hold it.
func (s *Server) srcAllowed(fe Object, src netip.Addr) bool {
	file := func(path string) []string {
		for _, a := range s.acl.running {
			if a.storage == path {
				return a.entries
			}
		}
		return nil
	}
	rules, _ := fe["tcp_request_rule_list"].([]any)
	for _, r := range rules {
		m, _ := r.(map[string]any)
		test, _ := m["cond_test"].(string)
		c, ok := parseSrcCond(test)
		if !ok || m["action"] != "reject" {
			continue
		}
		if holds := c.holds(src, file); holds == (m["cond"] == "if") {
			return false
		}
	}
	return true
}
