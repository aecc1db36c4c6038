package dataplanetest

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"testing"
)

// file sends a general storage request with a multipart file_upload.
func (c *tc) file(method, path, name, content string) int {
	c.t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	part, _ := mw.CreateFormFile("file_upload", name)
	_, _ = io.WriteString(part, content)
	_ = mw.Close()
	req, _ := http.NewRequest(method, c.s.URL+"/v3/services/haproxy/"+path, &b)
	req.SetBasicAuth("u", "p")
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	c.hdr = resp.Header
	return resp.StatusCode
}

// The general storage and the runtime ACLs, as measured on the real API
// v3.4.0 with HAProxy 2.6.12: files come and go without a new version or a
// reload; a configuration naming a missing file is refused; HAProxy loads
// the file at a reload; the runtime ACL is replaced whole by its path (an
// id is refused), read by its id (404 with no entry), and a reload loads
// the file again (the runtime change is not written to it).
func TestStorageAndRuntimeACLs(t *testing.T) {
	c := start(t)
	v := c.s.Version()
	c.want("POST", c.file("POST", "storage/general", "fe_x.acl", "127.81.31.5/32\n"), 201)
	c.want("POST again", c.file("POST", "storage/general", "fe_x.acl", "x\n"), 409)
	c.want("PUT missing", c.file("PUT", "storage/general/nope.acl?skip_reload=true", "nope.acl", ""), 404)
	st, list := c.do("GET", "storage/general", nil)
	c.want("GET list", st, 200)
	path := GeneralStorageDir + "/fe_x.acl"
	if l := list.([]any); len(l) != 1 || l[0].(map[string]any)["file"] != path {
		t.Fatalf("list %v", list)
	}
	if c.s.Version() != v || c.s.Reloads() != 0 {
		t.Errorf("storage writes changed the version or reloaded")
	}
	fe := map[string]any{"name": "fe_x", "mode": "tcp", "default_backend": "be_ingress",
		"binds":                 map[string]any{"a": map[string]any{"name": "a", "address": "127.81.31.1", "port": 18080}},
		"tcp_request_rule_list": []any{map[string]any{"type": "connection", "action": "reject", "cond": "unless", "cond_test": "{ src -f " + path + ".missing }"}}}
	st, _ = c.do("POST", "configuration/frontends?full_section=true&version="+strconv.FormatInt(v, 10), fe)
	c.want("a rule naming a missing file", st, 400)
	fe["tcp_request_rule_list"].([]any)[0].(map[string]any)["cond_test"] = "{ src -f " + path + " }"
	st, _ = c.do("POST", "configuration/frontends?full_section=true&version="+strconv.FormatInt(v, 10), fe)
	c.want("a rule naming the file", st, 202)
	c.waitReloads(1)

	st, acls := c.do("GET", "runtime/acls", nil)
	c.want("GET acls", st, 200)
	a := acls.([]any)
	if len(a) != 4 || a[0].(map[string]any)["storage_name"] != path || a[0].(map[string]any)["id"] != "0" || a[1].(map[string]any)["storage_name"] != "src" {
		t.Fatalf("acls %v", acls)
	}
	entries := func() []any {
		st, out := c.do("GET", "runtime/acls/0/entries", nil)
		if st == 404 {
			return nil
		}
		c.want("GET entries", st, 200)
		return out.([]any)
	}
	if e := entries(); len(e) != 1 || e[0].(map[string]any)["value"] != "127.81.31.5/32" {
		t.Errorf("entries %v", e)
	}
	byPath := "runtime/acls/" + url.PathEscape(path) + "/entries"
	st, _ = c.do("PUT", "runtime/acls/0/entries", []any{map[string]any{"value": "127.81.31.6/32"}})
	c.want("PUT by id", st, 400)
	st, _ = c.do("GET", byPath, nil)
	c.want("GET by path", st, 404)
	st, _ = c.do("PUT", byPath, []any{map[string]any{"value": "foo bar"}})
	c.want("PUT a value that is no address", st, 400)
	st, _ = c.do("PUT", byPath, []any{map[string]any{"value": "127.81.31.6/32"}, map[string]any{"value": "10.9.0.0/16"}})
	c.want("PUT by path", st, 201)
	if e := entries(); len(e) != 2 || e[0].(map[string]any)["value"] != "127.81.31.6/32" {
		t.Errorf("entries after the PUT %v", e)
	}
	st, _ = c.do("PUT", byPath, []any{})
	c.want("PUT nothing", st, 201)
	if e := entries(); e != nil {
		t.Errorf("an empty ACL's entries: %v, want 404", e)
	}
	c.want("PUT file", c.file("PUT", "storage/general/fe_x.acl?skip_reload=true", "fe_x.acl", "127.81.31.7/32\n"), 204)
	if e := entries(); e != nil || c.s.Reloads() != 1 {
		t.Errorf("a file replaced changed the running ACL (%v) or reloaded", e)
	}
	c.s.Restart()
	if e := entries(); len(e) != 1 || e[0].(map[string]any)["value"] != "127.81.31.7/32" {
		t.Errorf("after a restart the worker runs %v, want the file's", e)
	}
	st, _ = c.do("DELETE", "storage/general/fe_x.acl", nil)
	c.want("DELETE while haproxy.cfg names it", st, 409)
	st, _ = c.do("DELETE", "configuration/frontends/fe_x?version="+strconv.FormatInt(c.s.Version(), 10), nil)
	c.want("DELETE the frontend", st, 202)
	st, _ = c.do("DELETE", "storage/general/fe_x.acl", nil)
	c.want("DELETE", st, 204)
	st, _ = c.do("DELETE", "storage/general/fe_x.acl", nil)
	c.want("DELETE again", st, 404)
}

// A general file's name is stored as the real API v3.4.0 stores it
// (measured: fe_probe.ipv4.acl is stored and listed as fe_probe_ipv4.acl,
// and a request naming either finds it).
func TestStorageNamesSanitized(t *testing.T) {
	c := start(t)
	c.want("POST", c.file("POST", "storage/general", "fe_y.ipv4.acl", "127.81.31.5/32\n"), 201)
	c.want("POST the stored name", c.file("POST", "storage/general", "fe_y_ipv4.acl", "x\n"), 409)
	st, list := c.do("GET", "storage/general", nil)
	c.want("GET list", st, 200)
	if l := list.([]any); len(l) != 1 || l[0].(map[string]any)["storage_name"] != "fe_y_ipv4.acl" || l[0].(map[string]any)["file"] != GeneralStorageDir+"/fe_y_ipv4.acl" {
		t.Errorf("list %v, want the one file fe_y_ipv4.acl", list)
	}
	c.want("PUT by the dotted name", c.file("PUT", "storage/general/fe_y.ipv4.acl?skip_reload=true", "fe_y.ipv4.acl", "127.81.31.6/32\n"), 204)
	for name, want := range map[string]string{
		"fe_a_b_1.acl": "fe_a_b_1.acl", "fe_a.ipv6.acl": "fe_a_ipv6.acl", "a b;c.acl": "a_b_c.acl",
		"x": "x", ".acl": "_acl", "a.b": "a.b", "../x.acl": "_x.acl",
	} {
		if got := storedName(name); got != want {
			t.Errorf("storedName(%q) = %q, want %q", name, got, want)
		}
	}
}
