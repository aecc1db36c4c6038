package model

import (
	"net/netip"
	"reflect"
	"testing"
	"time"
)

// setField gives field i of the struct v points to a non-zero value.
func setField(t *testing.T, v reflect.Value, i int) {
	t.Helper()
	f := v.Elem().Field(i)
	switch f.Kind() {
	case reflect.String:
		f.SetString("x")
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Int, reflect.Int64:
		f.SetInt(7)
	case reflect.Struct:
		if f.Type() == reflect.TypeOf(Check{}) {
			f.Set(reflect.ValueOf(Check{Enabled: true}))
			return
		}
		t.Fatalf("unhandled struct field %s", v.Elem().Type().Field(i).Name)
	case reflect.Slice:
		switch f.Type() {
		case reflect.TypeOf([]Bind{}):
			f.Set(reflect.ValueOf([]Bind{{Addr: netip.MustParseAddr("10.0.0.1"), Port: 1}}))
		case reflect.TypeOf([]netip.Prefix{}):
			f.Set(reflect.ValueOf([]netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}))
		case reflect.TypeOf([]Route{}):
			f.Set(reflect.ValueOf([]Route{{SNI: "a.example.com", Backends: []WeightedBackend{{Name: "b", Weight: 1}}}}))
		case reflect.TypeOf([]Server{}):
			f.Set(reflect.ValueOf([]Server{{Addr: netip.MustParseAddr("10.0.0.1"), Port: 1}}))
		default:
			t.Fatalf("unhandled slice field %s", v.Elem().Type().Field(i).Name)
		}
	case reflect.Pointer:
		if f.Type() == reflect.TypeOf(&HTTP{}) {
			f.Set(reflect.ValueOf(&HTTP{Port: 80}))
			return
		}
		if f.Type() == reflect.TypeOf(&TLS{}) {
			f.Set(reflect.ValueOf(&TLS{}))
			return
		}
		if f.Type() == reflect.TypeOf(&BackendTLS{}) {
			f.Set(reflect.ValueOf(&BackendTLS{}))
			return
		}
		if f.Type() == reflect.TypeOf(&CookieAffinity{}) {
			f.Set(reflect.ValueOf(&CookieAffinity{}))
			return
		}
		t.Fatalf("unhandled pointer field %s", v.Elem().Type().Field(i).Name)
	default:
		t.Fatalf("unhandled field %s of kind %s", v.Elem().Type().Field(i).Name, f.Kind())
	}
}

// Every field counts in Frontend.Equal: a field added later without
// updating Equal fails here.
func TestFrontendEqualCoversEveryField(t *testing.T) {
	for i := range reflect.TypeOf(Frontend{}).NumField() {
		var g Frontend
		setField(t, reflect.ValueOf(&g), i)
		if (Frontend{}).Equal(g) || g.Equal(Frontend{}) {
			t.Errorf("Equal ignores field %s", reflect.TypeOf(g).Field(i).Name)
		}
	}
}

// Every field but Servers counts in Backend.SameStructure.
func TestBackendSameStructureCoversEveryField(t *testing.T) {
	for i := range reflect.TypeOf(Backend{}).NumField() {
		var c Backend
		setField(t, reflect.ValueOf(&c), i)
		name := reflect.TypeOf(c).Field(i).Name
		if got, want := (&Backend{}).SameStructure(&c), name == "Servers"; got != want {
			t.Errorf("SameStructure after changing %s = %v, want %v", name, got, want)
		}
	}
}

func TestValidPaths(t *testing.T) {
	for _, c := range []struct {
		in          string
		check, file bool
	}{
		{"/readyz", true, true},
		{"/livez/ping", true, true},
		{"/etc/kubernetes/pki/ca.crt", true, true},
		{"/a~b", true, false},
		{"readyz", false, false},
		{"", false, false},
		{"/readyz verify none", false, false},
		{"/x\n\tserver evil 1.2.3.4:80", false, false},
		{"/x#comment", false, false},
		{"/x?y=1", false, false},
		{"/etc/../root", true, false},
		{"/etc/..", true, false},
		{"/a'b", false, false},
	} {
		if got := ValidCheckPath(c.in); got != c.check {
			t.Errorf("ValidCheckPath(%q) = %v, want %v", c.in, got, c.check)
		}
		if got := ValidFilePath(c.in); got != c.file {
			t.Errorf("ValidFilePath(%q) = %v, want %v", c.in, got, c.file)
		}
	}
}

// Frontends whose routes differ in a server name, a backend or a weight
// are not equal: each is a reload.
func TestFrontendEqualRoutes(t *testing.T) {
	base := func() Frontend {
		return Frontend{Name: "f", Routes: []Route{{SNI: "a.example.com", Backends: []WeightedBackend{{Name: "x", Weight: 80}, {Name: "y", Weight: 20}}}}}
	}
	for name, change := range map[string]func(f *Frontend){
		"sni":     func(f *Frontend) { f.Routes[0].SNI = "b.example.com" },
		"backend": func(f *Frontend) { f.Routes[0].Backends[1].Name = "z" },
		"weight":  func(f *Frontend) { f.Routes[0].Backends[0].Weight = 70 },
		"more":    func(f *Frontend) { f.Routes = append(f.Routes, Route{}) },
		"delay":   func(f *Frontend) { f.InspectDelay = 1 },
	} {
		g := base()
		change(&g)
		if base().Equal(g) {
			t.Errorf("%s: Equal ignores it", name)
		}
	}
	if !base().Equal(base()) {
		t.Error("equal frontends differ")
	}
}

// The _nodes agent runs every second only when a check runs more often
// than that: then no longer interval spreads the checks' first runs after
// a reload.
func TestNodesAgentInter(t *testing.T) {
	check := func(inter time.Duration) *Backend {
		return &Backend{Name: "be", Check: Check{Enabled: true, Inter: inter, Rise: 2, Fall: 2}}
	}
	nodes := &Backend{Name: NodesBackend}
	for _, tc := range []struct {
		name     string
		backends []*Backend
		want     time.Duration
	}{
		{"none", nil, time.Hour},
		{"default interval (2s)", []*Backend{nodes, check(0)}, time.Hour},
		{"a second", []*Backend{nodes, check(time.Second)}, time.Hour},
		{"200ms", []*Backend{nodes, check(2 * time.Second), check(200 * time.Millisecond)}, time.Second},
		{"999ms", []*Backend{nodes, check(999 * time.Millisecond)}, time.Second},
		{"disabled check", []*Backend{nodes, {Name: "be", Check: Check{Inter: 200 * time.Millisecond}}}, time.Hour},
	} {
		if got := (Config{Backends: tc.backends}).NodesAgentInter(); got != tc.want {
			t.Errorf("%s: NodesAgentInter = %v, want %v", tc.name, got, tc.want)
		}
	}
}
