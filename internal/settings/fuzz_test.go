package settings

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var haproxyToken = regexp.MustCompile(`^[a-z0-9]+$`)

// rendered returns every field of s as the renderer would write it.
func rendered(s Settings) map[string]string {
	return map[string]string{
		"balance":         s.Balance,
		"check":           s.Check.String(),
		"check-interval":  FormatDuration(s.CheckInterval),
		"rise":            strconv.Itoa(s.Rise),
		"fall":            strconv.Itoa(s.Fall),
		"send-proxy-v2":   strconv.FormatBool(s.SendProxyV2),
		"accept-proxy":    strconv.FormatBool(s.AcceptProxy),
		"timeout-connect": FormatDuration(s.TimeoutConnect),
		"timeout-client":  FormatDuration(s.TimeoutClient),
		"timeout-server":  FormatDuration(s.TimeoutServer),
		"maxconn":         strconv.Itoa(s.MaxConn),
		"backend-port":    strconv.Itoa(int(s.BackendPort)),
	}
}

// FuzzApply feeds one annotation (name under Prefix, value) to Apply. Plain
// `go test` runs the seeds below; `go test -fuzz=FuzzApply` explores further.
func FuzzApply(f *testing.F) {
	seeds := [][2]string{
		{"balance", "leastconn"}, {"balance", "roundrobin\nserver x 1.2.3.4:80"},
		{"check", "false"}, {"check", "true#"}, {"check", "auto"}, {"check", "Auto"}, {"check", "auto\n"},
		{"check-interval", "500ms"}, {"check-interval", "2s\nlisten x"}, {"check-interval", "1.5s"},
		{"check-interval", "9999999h"}, {"rise", "100"}, {"rise", "-1"}, {"fall", "3;"},
		{"send-proxy-v2", "true"}, {"accept-proxy", "true"},
		{"timeout-connect", "24h"}, {"timeout-client", "0000001ms"}, {"timeout-server", "1m "},
		{"maxconn", "1000000"}, {"maxconn", "0"}, {"backend-port", "65535"}, {"backend-port", "6553５"},
		{"enabled", "\x00"}, {"bogus", "1"}, {"", ""}, {"bad\nkey", "v"}, {"rise", "1\r\nWarning: forged"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		start := Defaults()
		got, errs := Apply(start, map[string]string{Prefix + name: value})
		for _, err := range errs {
			// One line, of bounded length, whatever the key and value.
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || len(msg) > 24*MaxShown+1000 {
				t.Fatalf("error for %q=%q: %d bytes: %.200q", name, value, len(msg), msg)
			}
		}
		if len(errs) > 0 {
			if got != start {
				t.Fatalf("settings changed despite errors %v", errs)
			}
			return
		}
		if lookup(name) == nil {
			return // only EnabledAnnotation, which Apply leaves to the caller
		}
		for _, r := range value {
			if unicode.IsSpace(r) || unicode.IsControl(r) || r == '#' || r > unicode.MaxASCII {
				t.Fatalf("accepted %s=%q containing %q", name, value, r)
			}
		}
		for field, v := range rendered(got) {
			if !haproxyToken.MatchString(v) {
				t.Fatalf("accepted %s=%q renders %s as %q", name, value, field, v)
			}
		}
		if err := Validate(got); err != nil {
			t.Fatalf("accepted %s=%q gives settings Validate refuses: %v", name, value, err)
		}
	})
}
