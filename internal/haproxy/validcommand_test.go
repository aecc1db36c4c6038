package haproxy

import "testing"

func TestValidCommand(t *testing.T) {
	for _, c := range []struct {
		cmd string
		ok  bool
	}{
		{"show info", true},
		{`set map /m k max-age=1\;\ includeSubDomains`, true},
		{`set map /m k a\\b`, true},
		{"", false},
		{"   ", false},
		{"show info\nshow stat", false},
		{"show info\r", false},
		{"set map /m k a;b", false},
		{`set map /m k a\\;b`, false}, // an escaped backslash, then a bare ';'
		{`set map /m k a\`, false},    // would escape the joining ';'
		{`set map /m k a\\\`, false},
	} {
		if err := validCommand(c.cmd); (err == nil) != c.ok {
			t.Errorf("validCommand(%q) = %v, want ok %v", c.cmd, err, c.ok)
		}
	}
}
