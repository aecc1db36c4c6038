package model

import "testing"

// Every field of a TLS and of its certificates counts in TLS.Equal.
func TestTLSEqual(t *testing.T) {
	base := func() *TLS {
		return &TLS{Default: "a", ALPN: []string{"h2"},
			Certificates: []Certificate{{Name: "a", SNI: []string{"a.example"}, PEM: []byte("x")}}}
	}
	for _, tc := range []struct {
		name   string
		change func(*TLS)
	}{
		{"default", func(x *TLS) { x.Default = "b" }},
		{"alpn", func(x *TLS) { x.ALPN = nil }},
		{"certificate name", func(x *TLS) { x.Certificates[0].Name = "b" }},
		{"sni", func(x *TLS) { x.Certificates[0].SNI = nil }},
		{"pem", func(x *TLS) { x.Certificates[0].PEM = []byte("y") }},
		{"certificates", func(x *TLS) { x.Certificates = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := base(), base()
			if !a.Equal(b) {
				t.Fatal("equal TLS differ")
			}
			tc.change(b)
			if a.Equal(b) || b.Equal(a) || a.Equal(nil) {
				t.Fatal("Equal ignores the change")
			}
		})
	}
	var none *TLS
	if !none.Equal(nil) {
		t.Fatal("nil differs from nil")
	}
}

func TestValidTLSNames(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"cert_default_web-tls", true}, {"", false}, {"cert.pem", false}, {"a b", false}, {"../x", false}, {"A", false},
	} {
		if got := ValidCertName(tc.in); got != tc.want {
			t.Errorf("ValidCertName(%q) = %v", tc.in, got)
		}
	}
	for _, tc := range []struct {
		in   []string
		want bool
	}{
		{nil, true}, {[]string{"h2", "http/1.1"}, true}, {[]string{"h2", "h2"}, false}, {[]string{"h2,evil"}, false},
	} {
		if got := ValidALPN(tc.in); got != tc.want {
			t.Errorf("ValidALPN(%q) = %v", tc.in, got)
		}
	}
}
