package nodes

import "testing"

func TestTierPrefix(t *testing.T) {
	tests := []struct {
		name, prefix string
		pid          int
		ok           bool
	}{
		{"hkn123-4-n1", "hkn123-4-", 123, true},
		{"hkn123-4-lb", "hkn123-4-", 123, true},
		{"hkn123-x-lb", "", 0, false},
		{"hknabc-4-lb", "", 0, false},
		{"hks123-4-lb", "", 0, false}, // netlab's
		{"hkn123-4", "", 0, false},
	}
	for _, tc := range tests {
		prefix, pid, ok := tierPrefix(tc.name)
		if prefix != tc.prefix || pid != tc.pid || ok != tc.ok {
			t.Errorf("tierPrefix(%q) = %q, %d, %v; want %q, %d, %v", tc.name, prefix, pid, ok, tc.prefix, tc.pid, tc.ok)
		}
	}
}
