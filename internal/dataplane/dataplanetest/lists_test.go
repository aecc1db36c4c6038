package dataplanetest

import (
	"strconv"
	"testing"
)

// Measured on the real API v3.4.0: a section's rule lists (*_list) are
// written only with full_section=true. Without it a POST creates the
// section with none and a PUT keeps the ones it had, whatever the body
// says (the answer echoes the body); a GET without it shows none.
func TestRuleListsOnlyWithFullSection(t *testing.T) {
	c := start(t)
	rule := func(test string) []any {
		return []any{map[string]any{"type": "connection", "action": "reject", "cond": "unless", "cond_test": test}}
	}
	fe := map[string]any{"name": "fe_l", "mode": "tcp", "default_backend": "be_ingress", "tcp_request_rule_list": rule("{ src 10.0.0.0/8 }")}
	rules := func() any {
		_, out := c.do("GET", "configuration/frontends/fe_l?full_section=true", nil)
		return out.(map[string]any)["tcp_request_rule_list"]
	}
	v := func() string { return strconv.FormatInt(c.s.Version(), 10) }
	st, _ := c.do("POST", "configuration/frontends?version="+v(), fe)
	c.want("POST", st, 202)
	if r := rules(); r != nil {
		t.Errorf("POST without full_section wrote rules %v", r)
	}
	st, _ = c.do("PUT", "configuration/frontends/fe_l?full_section=true&version="+v(), fe)
	c.want("PUT full", st, 200) // only the rules differ: no reload (TestLiveFrontendFullSection)
	fe["tcp_request_rule_list"] = rule("{ src 10.1.0.0/16 }")
	fe["maxconn"] = 77
	if st, _ = c.do("PUT", "configuration/frontends/fe_l?version="+v(), fe); st >= 300 {
		t.Fatalf("PUT: %d", st)
	}
	r, _ := rules().([]any)
	if len(r) != 1 || r[0].(map[string]any)["cond_test"] != "{ src 10.0.0.0/8 }" {
		t.Errorf("PUT without full_section: rules %v, want the ones it had", r)
	}
	_, got := c.do("GET", "configuration/frontends/fe_l", nil)
	if g := got.(map[string]any); g["maxconn"] != float64(77) || g["tcp_request_rule_list"] != nil {
		t.Errorf("GET without full_section: %v", g)
	}
}
