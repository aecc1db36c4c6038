package e2e

import (
	"slices"
	"testing"
)

// The benchmarks' HAPROXY_ENV entries: each NAME=VALUE goes to HAProxy,
// anything else is refused rather than run without it.
func TestScaleControllerHAProxyEnv(t *testing.T) {
	for _, tc := range []struct {
		env     []string
		want    []string
		wantErr bool
	}{
		{nil, nil, false},
		{[]string{"HAPROXY_BIN=/x", "GOGC=50"}, nil, false},
		{[]string{"HAPROXY_ENV=GLIBC_TUNABLES=glibc.malloc.hugetlb=1", "HAPROXY_ENV=A="},
			[]string{"GLIBC_TUNABLES=glibc.malloc.hugetlb=1", "A="}, false},
		{[]string{"HAPROXY_ENV=GLIBC_TUNABLES"}, nil, true},
		{[]string{"HAPROXY_ENV==1"}, nil, true},
	} {
		got, err := scaleController{label: "c", env: tc.env}.haproxyEnv()
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, %v; want %q, error %v", tc.env, got, err, tc.want, tc.wantErr)
		}
	}
}
