package dataplanetest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
)

// A backend's http-check rules as one list, measured on the real API
// v3.4.0 (2026-11-25):
//
//   - GET .../configuration/backends/NAME/http_checks: the rules, null when
//     there is none (a GET of the backend without full_section shows
//     none: withoutLists);
//   - PUT .../http_checks replaces the whole list with the body (a JSON
//     array; [] removes every rule): in a transaction 202; against a
//     version 202 and a reload, also when nothing changes; the answer
//     echoes the list.
//
// And with adv_check other than httpchk the API writes no
// httpchk_params (option httpchk carries them), so none reads back.

// httpChecksEndpoint serves those two requests; it reports whether r was
// one (its body is an array, not an object).
func (s *Server) httpChecksEndpoint(w http.ResponseWriter, r *http.Request, seg []string) bool {
	if len(seg) != 4 || seg[0] != "configuration" || seg[1] != "backends" || seg[3] != "http_checks" {
		return false
	}
	name := seg[2]
	switch r.Method {
	case http.MethodGet:
		c, ok := s.readConfig(w, r)
		if !ok {
			return true
		}
		b, ok := c.backends.get(name)
		if !ok {
			s.fail(w, errf(http.StatusNotFound, "backend %s not found", name))
			return true
		}
		rules, _ := b["http_check_list"].([]any)
		if len(rules) == 0 {
			s.reply(w, http.StatusOK, nil)
			return true
		}
		s.reply(w, http.StatusOK, rules)
	case http.MethodPut:
		var rules []any
		dec := json.NewDecoder(r.Body)
		dec.UseNumber()
		if err := dec.Decode(&rules); err != nil {
			s.fail(w, errf(http.StatusBadRequest, "parsing request body failed: %v", err))
			return true
		}
		for _, rule := range rules {
			if err := validHTTPCheck(rule); err != nil {
				s.fail(w, &apiErr{http.StatusUnprocessableEntity, err.Error()})
				return true
			}
		}
		s.write(w, r, func(c *config) (any, *liveChange, *apiErr) {
			b, ok := c.backends.get(name)
			if !ok {
				return nil, nil, errf(http.StatusBadRequest, "parent backend %s does not exist", name)
			}
			b = maps.Clone(b)
			if len(rules) == 0 {
				delete(b, "http_check_list")
			} else {
				b["http_check_list"] = rules
			}
			c.backends = c.backends.clone()
			c.backends.put(name, b)
			if rules == nil {
				rules = []any{}
			}
			return rules, nil, nil
		})
	default:
		s.fail(w, errf(http.StatusMethodNotAllowed, "method %s not allowed", r.Method))
	}
	return true
}

// validHTTPCheck checks a rule of the kinds this model renders (http-check
// expect MATCH PATTERN); the real API knows many more, which the driver
// never writes.
func validHTTPCheck(rule any) error {
	m, ok := rule.(map[string]any)
	if !ok {
		return fmt.Errorf("validation failure list:\nhttp_check in body must be of type object")
	}
	if m["type"] != "expect" {
		return fmt.Errorf("validation failure list:\ntype in body: the test server models only expect rules, got %v", m["type"])
	}
	match, _ := m["match"].(string)
	pattern, _ := m["pattern"].(string)
	if match != "status" && match != "string" || pattern == "" || strings.ContainsAny(pattern, " \t\r\n") {
		return fmt.Errorf("validation failure list:\nmatch %v pattern %v in body: the test server models only expect status|string WORD", m["match"], m["pattern"])
	}
	return nil
}

// withoutHTTPChkParams drops httpchk_params from a backend whose adv_check
// is not httpchk, as the real API writes (and so reads back) none there.
func withoutHTTPChkParams(o Object) Object {
	if _, ok := o["httpchk_params"]; !ok || o["adv_check"] == "httpchk" {
		return o
	}
	o = maps.Clone(o)
	delete(o, "httpchk_params")
	return o
}
