package haproxy

import "testing"

func TestFramingFor(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    int
	}{
		{"2.6.12-1+deb12u4", lineMax},
		{"3.0.11-1+deb13u4", lineMax},
		{"3.1.0", 0},
		{"3.2.26-1", 0},
		{"3.4-dev5", 0},
		{"", 0},        // unknown: one command per line, which every version frames
		{"garbage", 0}, // the same
	} {
		if got := framingFor(tc.version); got != tc.want {
			t.Errorf("framingFor(%q) = %d, want %d", tc.version, got, tc.want)
		}
	}
}
