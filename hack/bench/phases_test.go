package main

import "testing"

func TestParseUpdate(t *testing.T) {
	for _, tc := range []struct {
		line     string
		ok       bool
		reloaded bool
		check    string
		reasons  string
	}{
		{`time=2026-11-23T00:04:17.254Z level=INFO msg=update services=10001 frontends=10001 parse=187.065376ms render=90.120904ms check=1.9430358s write=291.083798ms reload=4.02311579s runtime=0s ops=0 total=6.799654837s reloaded=true reasons="[backend added be_x frontend added fe_x]"`,
			true, true, "1.9430358s", `"[backend added be_x frontend added fe_x]"`},
		{`time=2026-11-23T00:04:10.311Z level=INFO msg=update services=10000 frontends=10000 parse=4.9ms render=23.515µs check=0s write=0s reload=0s runtime=144.996µs ops=1 total=5.09ms`,
			true, false, "0s", ""},
		{`time=2026-11-23T00:04:10.311Z level=INFO msg="caches synced"`, false, false, "", ""},
	} {
		u, ok := parseUpdate(tc.line)
		if ok != tc.ok || u.reloaded != tc.reloaded || u.fields["check"] != tc.check || u.fields["reasons"] != tc.reasons {
			t.Errorf("parseUpdate(%.60q) = %v %v check %q reasons %q; want %v %v %q %q",
				tc.line, ok, u.reloaded, u.fields["check"], u.fields["reasons"], tc.ok, tc.reloaded, tc.check, tc.reasons)
		}
	}
	u, _ := parseUpdate(`msg=update parse=187.065376ms render=90.1ms check=1.9s write=291ms reload=4s runtime=0s total=6.8s reloaded=true`)
	if got, want := u.String(), "parse 187ms  render 90ms  check 1.9s  write 291ms  reload 4s  runtime 0s  total 6.8s"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
