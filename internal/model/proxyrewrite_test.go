package model

import "testing"

// TestValidProxyRewrite: each pair both set or both empty, one pair set,
// values without whitespace, quotes, '\\', ';' or ','.
func TestValidProxyRewrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *ProxyRewrite
		want bool
	}{
		{"nil", nil, false},
		{"empty", &ProxyRewrite{}, false},
		{"redirect", &ProxyRewrite{RedirectFrom: "http://a.local/", RedirectTo: "https://a.example/"}, true},
		{"all three", &ProxyRewrite{"http://a/", "/", "a.local", ".a.example", "/in/", "/"}, true},
		{"half a pair", &ProxyRewrite{RedirectFrom: "http://a/"}, false},
		{"a space", &ProxyRewrite{CookiePathFrom: "/a b", CookiePathTo: "/"}, false},
		{"a semicolon", &ProxyRewrite{CookieDomainFrom: "a;b", CookieDomainTo: "c"}, false},
		{"a comma", &ProxyRewrite{CookiePathFrom: "/a", CookiePathTo: "/b,c"}, false},
		{"a quote", &ProxyRewrite{RedirectFrom: "/a", RedirectTo: "/\"b"}, false},
		{"a newline", &ProxyRewrite{RedirectFrom: "/a\n", RedirectTo: "/b"}, false},
	} {
		if got := ValidProxyRewrite(tc.r); got != tc.want {
			t.Errorf("%s: ValidProxyRewrite = %v, want %v", tc.name, got, tc.want)
		}
	}
	r := ProxyRewrite{"f", "t", "", "", "/p", "/"}
	if got, want := r.Spec(), "f\nt\n\n\n/p\n/"; got != want {
		t.Errorf("Spec = %q, want %q", got, want)
	}
}
