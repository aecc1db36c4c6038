package haproxytest

import "testing"

// FreePort never hands out one port twice in a process: 1,000 draws
// from its 10,000 ports would repeat one almost surely (the birthday
// bound) if it drew at random alone.
func TestFreePortNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 1000 {
		p := FreePort(t)
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}
