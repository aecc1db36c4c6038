package model

import "testing"

func TestBackendTLS(t *testing.T) {
	a := &BackendTLS{SNI: "a.example.com", CA: "ca_apps_p_1", CAPEM: []byte("x")}
	for _, tc := range []struct {
		name            string
		b               *BackendTLS
		same, eq, valid bool
	}{
		{"equal", &BackendTLS{SNI: "a.example.com", CA: "ca_apps_p_1", CAPEM: []byte("x")}, true, true, true},
		{"other contents", &BackendTLS{SNI: "a.example.com", CA: "ca_apps_p_1", CAPEM: []byte("y")}, true, false, true},
		{"other SNI", &BackendTLS{SNI: "b.example.com", CA: "ca_apps_p_1", CAPEM: []byte("x")}, false, false, true},
		{"other CA", &BackendTLS{SNI: "a.example.com", CA: "ca_apps_p_2", CAPEM: []byte("x")}, false, false, true},
		{"none", nil, false, false, false},
		{"wildcard", &BackendTLS{SNI: "*.example.com", CA: "ca", CAPEM: []byte("x")}, false, false, false},
		{"syntax in SNI", &BackendTLS{SNI: "a verify none", CA: "ca", CAPEM: []byte("x")}, false, false, false},
		{"path in CA", &BackendTLS{SNI: "a.example.com", CA: "../ca", CAPEM: []byte("x")}, false, false, false},
		{"no CA", &BackendTLS{SNI: "a.example.com", CA: "ca"}, false, false, false},
		{"no verification", &BackendTLS{NoVerify: true}, false, false, true},
		{"no verification with a CA", &BackendTLS{NoVerify: true, CA: "ca", CAPEM: []byte("x")}, false, false, false},
		{"no SNI, the chain verified", &BackendTLS{CA: "ca_apps_p_1", CAPEM: []byte("x")}, false, false, true},
		{"verify host", &BackendTLS{SNI: "a.example.com", VerifyHost: "b.example.com", CA: "ca_apps_p_1", CAPEM: []byte("x")}, false, false, true},
		{"syntax in verify host", &BackendTLS{VerifyHost: "a crt /etc/x", CA: "ca", CAPEM: []byte("x")}, false, false, false},
	} {
		if got := a.SameStructure(tc.b); got != tc.same {
			t.Errorf("%s: SameStructure = %v, want %v", tc.name, got, tc.same)
		}
		if got := a.Equal(tc.b); got != tc.eq {
			t.Errorf("%s: Equal = %v, want %v", tc.name, got, tc.eq)
		}
		if got := ValidBackendTLS(tc.b); got != tc.valid {
			t.Errorf("%s: ValidBackendTLS = %v, want %v", tc.name, got, tc.valid)
		}
	}
	if !(*BackendTLS)(nil).SameStructure(nil) || !(*BackendTLS)(nil).Equal(nil) {
		t.Error("nil is not the same as nil")
	}
}
