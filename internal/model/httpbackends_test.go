package model

import (
	"slices"
	"strings"
	"testing"
)

func TestHTTPBackends(t *testing.T) {
	wb := func(names ...string) []WeightedBackend {
		var out []WeightedBackend
		for _, n := range names {
			out = append(out, WeightedBackend{Name: n, Weight: 1})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		h       *HTTP
		names   []string
		renamed []string // each action's backends after WithBackends(upper), joined by ","
	}{
		{"nil", nil, nil, nil},
		{"none", &HTTP{Actions: []HTTPAction{{Redirect: &Redirect{Code: 301}}}}, nil, []string{""}},
		{"shared and repeated", &HTTP{Actions: []HTTPAction{{Backends: wb("a", "b")}, {Redirect: &Redirect{Code: 302}}, {Backends: wb("b", RejectBackend, "c")}}},
			[]string{"a", "b", RejectBackend, "c"}, []string{"A,B", "", "B,_REJECT,C"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.h.BackendNames(); !slices.Equal(got, tc.names) {
				t.Errorf("BackendNames = %v, want %v", got, tc.names)
			}
			before := tc.h.BackendNames()
			r := tc.h.WithBackends(strings.ToUpper)
			if tc.h == nil {
				if r != nil {
					t.Errorf("WithBackends of nil = %v", r)
				}
				return
			}
			var got []string
			for _, a := range r.Actions {
				var ns []string
				for _, b := range a.Backends {
					ns = append(ns, b.Name)
				}
				got = append(got, strings.Join(ns, ","))
			}
			if !slices.Equal(got, tc.renamed) {
				t.Errorf("WithBackends: %v, want %v", got, tc.renamed)
			}
			if after := tc.h.BackendNames(); !slices.Equal(after, before) {
				t.Errorf("WithBackends changed the table it read: %v, was %v", after, before)
			}
			if len(r.Actions) != len(tc.h.Actions) || (len(r.Actions) > 1 && r.Actions[1].Redirect != tc.h.Actions[1].Redirect) {
				t.Errorf("WithBackends lost an action: %+v", r.Actions)
			}
		})
	}
}

// TestHTTPBackendsExtAuth: the backend an action's external
// authentication asks through is renamed with the others (the pool's
// spares: without it the internal frontend names a backend HAProxy does
// not have), the table read unchanged; an action without one keeps none.
func TestHTTPBackendsExtAuth(t *testing.T) {
	for _, tc := range []struct {
		name string
		ext  *ExtAuth
		want string
	}{
		{"service", &ExtAuth{URL: "http://auth.ns.svc.cluster.local/", Backend: "ns_auth_80"}, "NS_AUTH_80"},
		{"url only", &ExtAuth{URL: "http://10.0.0.1/"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &HTTP{Actions: []HTTPAction{{Backends: []WeightedBackend{{Name: "web", Weight: 1}}, Access: &HTTPAccess{ExtAuth: tc.ext}}}}
			was := tc.ext.Backend
			r := h.WithBackends(strings.ToUpper)
			if got := r.Actions[0].Access.ExtAuth.Backend; got != tc.want {
				t.Errorf("ExtAuth.Backend = %q, want %q", got, tc.want)
			}
			if h.Actions[0].Access.ExtAuth.Backend != was || h.Actions[0].Backends[0].Name != "web" {
				t.Errorf("WithBackends changed the table it read: %+v", h.Actions[0])
			}
		})
	}
}

// TestHTTPBackendsPassthrough: the TLS passthrough routes' backends are
// renamed with the others (without it the splitter's map names a backend
// HAProxy does not have in the pool, and the connection is terminated
// instead), the table read unchanged.
func TestHTTPBackendsPassthrough(t *testing.T) {
	h := &HTTP{Passthrough: &Passthrough{Routes: []PassRoute{{SNI: "a.example.com", Backend: "ns_a_443"}, {SNI: "b.example.com", Backend: "ns_b_443"}}}}
	r := h.WithBackends(strings.ToUpper)
	if got := r.Passthrough.Routes; len(got) != 2 || got[0].Backend != "NS_A_443" || got[1].Backend != "NS_B_443" || got[1].SNI != "b.example.com" {
		t.Errorf("passthrough routes = %+v", got)
	}
	if h.Passthrough.Routes[0].Backend != "ns_a_443" {
		t.Errorf("WithBackends changed the table it read: %+v", h.Passthrough.Routes)
	}
}

// TestHTTPBackendNamesEveryUse: BackendNames lists every backend the
// table names, a table whose only use of a backend is an external
// authentication or a TLS passthrough route included (a spare used so
// is not free: render's spare ranges), and exactly the names
// WithBackends renames.
func TestHTTPBackendNamesEveryUse(t *testing.T) {
	web := []WeightedBackend{{Name: "web", Weight: 1}}
	for _, tc := range []struct {
		name  string
		h     *HTTP
		names []string
	}{
		{"external auth only", &HTTP{Actions: []HTTPAction{{Redirect: &Redirect{Code: 301}, Access: &HTTPAccess{ExtAuth: &ExtAuth{URL: "http://auth/", Backend: "_pool_7"}}}}},
			[]string{"_pool_7"}},
		{"external auth beside the action's backend", &HTTP{Actions: []HTTPAction{{Backends: web, Access: &HTTPAccess{ExtAuth: &ExtAuth{URL: "http://auth/", Backend: "auth"}}}}},
			[]string{"web", "auth"}},
		{"external auth by URL only", &HTTP{Actions: []HTTPAction{{Backends: web, Access: &HTTPAccess{ExtAuth: &ExtAuth{URL: "http://10.0.0.1/"}}}}},
			[]string{"web"}},
		{"passthrough only", &HTTP{Passthrough: &Passthrough{Routes: []PassRoute{{SNI: "a.example.com", Backend: "_pool_8"}, {SNI: "b.example.com", Backend: "_pool_8"}}}},
			[]string{"_pool_8"}},
		{"all three", &HTTP{Actions: []HTTPAction{{Backends: web, Access: &HTTPAccess{ExtAuth: &ExtAuth{URL: "http://auth/", Backend: "auth"}}}},
			Passthrough: &Passthrough{Routes: []PassRoute{{SNI: "a.example.com", Backend: "tls"}}}},
			[]string{"web", "auth", "tls"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.h.BackendNames(); !slices.Equal(got, tc.names) {
				t.Errorf("BackendNames = %v, want %v", got, tc.names)
			}
			var renamed []string
			r := tc.h.WithBackends(func(n string) string {
				if !slices.Contains(renamed, n) {
					renamed = append(renamed, n)
				}
				return strings.ToUpper(n)
			})
			if !slices.Equal(renamed, tc.names) {
				t.Errorf("WithBackends renamed %v, BackendNames %v", renamed, tc.names)
			}
			var upper []string
			for _, n := range tc.names {
				upper = append(upper, strings.ToUpper(n))
			}
			if got := r.BackendNames(); !slices.Equal(got, upper) {
				t.Errorf("BackendNames after WithBackends = %v, want %v", got, upper)
			}
			if got := tc.h.BackendNames(); !slices.Equal(got, tc.names) {
				t.Errorf("WithBackends changed the table it read: %v", got)
			}
		})
	}
}
