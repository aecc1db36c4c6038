package model

import "testing"

func TestCookieAffinity(t *testing.T) {
	for _, tc := range []struct {
		c     *CookieAffinity
		valid bool
	}{
		{&CookieAffinity{Name: "INGRESSCOOKIE"}, true},
		{&CookieAffinity{Name: "srv-id_2", MaxAge: 3600, Secure: true, SameSite: "None"}, true},
		{nil, false},
		{&CookieAffinity{}, false},
		{&CookieAffinity{Name: "SRV; Domain=evil"}, false},
		{&CookieAffinity{Name: "SRV insert"}, false},
		{&CookieAffinity{Name: "SRV", MaxAge: -1}, false},
		{&CookieAffinity{Name: "SRV", MaxAge: MaxCookieAge + 1}, false},
		{&CookieAffinity{Name: "SRV", SameSite: "lax"}, false},
	} {
		if got := ValidCookieAffinity(tc.c); got != tc.valid {
			t.Errorf("%+v: valid %v, want %v", tc.c, got, tc.valid)
		}
	}
	a, b := &CookieAffinity{Name: "A"}, &CookieAffinity{Name: "A"}
	if !a.Equal(b) || a.Equal(&CookieAffinity{Name: "A", Secure: true}) || a.Equal(nil) || !(*CookieAffinity)(nil).Equal(nil) {
		t.Error("Equal")
	}
}
