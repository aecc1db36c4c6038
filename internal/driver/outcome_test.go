package driver

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		later bool
	}{
		{"applied", nil, false},
		{"reload put off, wrapped", fmt.Errorf("instance a: %w", ErrDeferred), true},
		{"failed", errors.New("socket unavailable"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Outcome(Result{RetryAfter: 3 * time.Second}, tc.err)
			if o.Later != tc.later || !errors.Is(o.Err, tc.err) || (tc.later && o.After != 3*time.Second) {
				t.Errorf("Outcome = %+v, want Later %v with the error kept and After 3s when later", o, tc.later)
			}
		})
	}
}
