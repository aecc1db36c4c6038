package settings

import (
	"testing"
	"time"
)

// Validate accepts what Apply and the desired package produce and
// refuses what the grammar never would (a damaged last-good file).
func TestValidate(t *testing.T) {
	good, errs := Apply(Defaults(), map[string]string{Prefix + "balance": "leastconn", Prefix + "maxconn": "100"})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	good.SourceRanges, good.Affinity = "192.0.2.0/24,2001:db8::/32", time.Hour
	tests := []struct {
		name string
		edit func(*Settings)
		ok   bool
	}{
		{"defaults", func(*Settings) {}, true},
		{"directive in balance", func(s *Settings) { s.Balance = "roundrobin\n  server x 192.0.2.1:80" }, false},
		{"unknown balance", func(s *Settings) { s.Balance = "static-rr" }, false},
		{"rise out of range", func(s *Settings) { s.Rise = 0 }, false},
		{"interval below the floor", func(s *Settings) { s.CheckInterval = time.Millisecond }, false},
		{"source ranges not canonical", func(s *Settings) { s.SourceRanges = "192.0.2.1/24" }, false},
		{"source ranges with a directive", func(s *Settings) { s.SourceRanges = "192.0.2.0/24\nacl x" }, false},
		{"affinity over a day", func(s *Settings) { s.Affinity = 48 * time.Hour }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := good
			tc.edit(&s)
			if err := Validate(s); (err == nil) != tc.ok {
				t.Errorf("Validate: %v, want ok=%v", err, tc.ok)
			}
		})
	}
	if err := Validate(Defaults()); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
