package dataplanetest

import (
	"encoding/json"
	"strconv"
	"testing"
)

// Measured on the real API v3.4.0: a backend's http-check rules are read
// and replaced as one list at .../http_checks (null when none; a PUT
// replaces them, 202 and a reload even when nothing changes; [] removes
// them), and a backend whose adv_check is not httpchk keeps no
// httpchk_params.
func TestHTTPChecksList(t *testing.T) {
	c := start(t)
	v := func() string { return strconv.FormatInt(c.s.Version(), 10) }
	path := "configuration/backends/be_ingress/http_checks"
	st, out := c.do("GET", path, nil)
	if c.want("GET none", st, 200); out != nil {
		t.Errorf("GET with no rule: %v, want null", out)
	}
	expect := []any{map[string]any{"type": "expect", "match": "status", "pattern": "200"}}
	for i := range 2 {
		r0 := c.s.Reloads()
		st, out = c.do("PUT", path+"?version="+v(), expect)
		c.want("PUT", st, 202)
		if !sameJSON(out, expect) {
			t.Errorf("PUT %d echoed %v", i, out)
		}
		c.waitReloads(r0 + 1)
	}
	if st, out = c.do("GET", path, nil); !sameJSON(out, expect) {
		t.Errorf("GET: %d %v, want %v", st, out, expect)
	}
	_, full := c.do("GET", "configuration/backends/be_ingress?full_section=true", nil)
	if l := full.(map[string]any)["http_check_list"]; !sameJSON(l, expect) {
		t.Errorf("the backend read whole: http_check_list %v", l)
	}
	_, plain := c.do("GET", "configuration/backends/be_ingress", nil)
	if l := plain.(map[string]any)["http_check_list"]; l != nil {
		t.Errorf("the backend read without full_section: http_check_list %v, want none", l)
	}
	// In a transaction, then [] removes them.
	id := c.open()
	st, _ = c.do("PUT", path+"?transaction_id="+id, []any{})
	c.want("PUT [] in a transaction", st, 202)
	if _, out = c.do("GET", path+"?transaction_id="+id, nil); out != nil {
		t.Errorf("GET in the transaction: %v, want null", out)
	}
	if _, out = c.do("GET", path, nil); !sameJSON(out, expect) {
		t.Errorf("GET outside the transaction: %v, want the rules until the commit", out)
	}
	st, _ = c.do("PUT", "transactions/"+id, nil)
	c.want("commit", st, 202)
	if _, out = c.do("GET", path, nil); out != nil {
		t.Errorf("GET after the commit: %v, want null", out)
	}
	st, _ = c.do("PUT", path+"?version="+v(), []any{map[string]any{"type": "send", "meth": "GET"}})
	c.want("a rule the model does not know", st, 422)

	// option tcp-check: no httpchk_params.
	be := map[string]any{"name": "be_ingress", "mode": "tcp", "adv_check": "tcp-check", "httpchk_params": map[string]any{"method": "GET", "uri": "/x"}}
	st, _ = c.do("PUT", "configuration/backends/be_ingress?version="+v(), be)
	c.want("PUT tcp-check", st, 202)
	if _, plain = c.do("GET", "configuration/backends/be_ingress", nil); plain.(map[string]any)["httpchk_params"] != nil {
		t.Errorf("tcp-check: httpchk_params %v read back, want none", plain.(map[string]any)["httpchk_params"])
	}
}

// sameJSON compares two decoded JSON values by their encoding.
func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
