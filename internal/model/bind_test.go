package model

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseBind(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Bind
		wantErr string
	}{
		{in: ":6443", want: Bind{Port: 6443}},
		{in: "192.0.2.1:8404", want: Bind{Addr: netip.MustParseAddr("192.0.2.1"), Port: 8404}},
		{in: "[2001:db8::1]:443", want: Bind{Addr: netip.MustParseAddr("2001:db8::1"), Port: 443}},
		{in: "6443", wantErr: "want :PORT"},
		{in: ":0", wantErr: "invalid port"},
		{in: ":http", wantErr: "invalid port"},
		{in: ":6443 ssl crt /x", wantErr: "invalid port"},
		{in: "localhost:8404", wantErr: "want an IP address"},
		{in: "[fe80::1%eth0]:8404", wantErr: "without a zone"},
	} {
		got, err := ParseBind(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}
