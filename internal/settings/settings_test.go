package settings

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestApplyValid(t *testing.T) {
	tests := []struct {
		key, value string
		want       func(*Settings)
	}{
		{"balance", "leastconn", func(s *Settings) { s.Balance = "leastconn" }},
		{"balance", "roundrobin", func(s *Settings) {}},
		{"balance", "source", func(s *Settings) { s.Balance = "source" }},
		{"balance", "first", func(s *Settings) { s.Balance = "first" }},
		{"balance", "random", func(s *Settings) { s.Balance = "random" }},
		{"check", "false", func(s *Settings) { s.Check = CheckFalse }},
		{"check", "true", func(s *Settings) { s.Check = CheckTrue }},
		{"check", "auto", func(s *Settings) {}},
		{"check-interval", "100ms", func(s *Settings) { s.CheckInterval = 100 * time.Millisecond }},
		{"check-interval", "5s", func(s *Settings) { s.CheckInterval = 5 * time.Second }},
		{"check-interval", "1h", func(s *Settings) { s.CheckInterval = time.Hour }},
		{"check-interval", "60m", func(s *Settings) { s.CheckInterval = time.Hour }},
		{"check-interval", "3600000ms", func(s *Settings) { s.CheckInterval = time.Hour }},
		{"check-interval", "0010s", func(s *Settings) { s.CheckInterval = 10 * time.Second }},
		{"rise", "1", func(s *Settings) { s.Rise = 1 }},
		{"rise", "100", func(s *Settings) { s.Rise = 100 }},
		{"fall", "7", func(s *Settings) { s.Fall = 7 }},
		{"send-proxy-v2", "true", func(s *Settings) { s.SendProxyV2 = true }},
		{"accept-proxy", "true", func(s *Settings) { s.AcceptProxy = true }},
		{"timeout-connect", "1ms", func(s *Settings) { s.TimeoutConnect = time.Millisecond }},
		{"timeout-connect", "24h", func(s *Settings) { s.TimeoutConnect = 24 * time.Hour }},
		{"timeout-client", "30s", func(s *Settings) { s.TimeoutClient = 30 * time.Second }},
		{"timeout-server", "1440m", func(s *Settings) { s.TimeoutServer = 24 * time.Hour }},
		{"maxconn", "1", func(s *Settings) { s.MaxConn = 1 }},
		{"maxconn", "1000000", func(s *Settings) { s.MaxConn = 1000000 }},
		{"maxconn", "0", func(s *Settings) { s.MaxConn = 0 }},
		{"backend-port", "8080", func(s *Settings) { s.BackendPort = 8080 }},
		{"backend-port", "65535", func(s *Settings) { s.BackendPort = 65535 }},
		{"backend-port", "0", func(s *Settings) { s.BackendPort = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			start := Defaults()
			start.MaxConn, start.BackendPort = 10, 10 // so that "0" is visible
			want := start
			tt.want(&want)
			got, errs := Apply(start, map[string]string{Prefix + tt.key: tt.value})
			if len(errs) > 0 {
				t.Fatalf("Apply: %v", errs)
			}
			if got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestApplyInvalid(t *testing.T) {
	tests := []struct{ key, value string }{
		// Injection attempts.
		{"balance", "roundrobin\n  server evil 6.6.6.6:80"},
		{"balance", "roundrobin #"},
		{"balance", "roundrobin;"},
		{"balance", "roundrobin "},
		{"balance", " roundrobin"},
		{"balance", "\"roundrobin\""},
		{"balance", "roundrobin\x00"},
		{"balance", "uri"},
		{"balance", "RoundRobin"},
		{"balance", ""},
		{"check-interval", "2s\nlisten x"},
		{"check-interval", "2s\r\n"},
		{"check-interval", "2s#"},
		{"check-interval", "2s;"},
		{"check-interval", " 2s"},
		{"check-interval", "2s "},
		{"check-interval", "2\u00a0s"},      // no-break space
		{"check-interval", "2s\u2028"},      // line separator
		{"check-interval", "\u0662s"},       // Arabic-Indic digit two
		{"check-interval", "２s"},            // fullwidth digit
		{"check-interval", "1.5s"},          // fractions
		{"check-interval", "1m30s"},         // compound
		{"check-interval", "-2s"},           // sign
		{"check-interval", "+2s"},           //
		{"check-interval", "2"},             // no unit
		{"check-interval", "2S"},            // case
		{"check-interval", "2us"},           // unit not offered
		{"check-interval", "2d"},            //
		{"check-interval", "s"},             // no digits
		{"check-interval", "99ms"},          // below 100ms
		{"check-interval", "0s"},            // zero
		{"check-interval", "2h"},            // above 1h
		{"check-interval", "12345678ms"},    // eight digits
		{"check-interval", "9999999h"},      // would overflow int64 ns
		{"check-interval", "0x10s"},         // hex
		{"check-interval", "2e3ms"},         // exponent
		{"check-interval", "1_000ms"},       // Go digit separators
		{"check-interval", "'2s'"},          // quotes
		{"timeout-connect", "0ms"},          // zero
		{"timeout-connect", "25h"},          // above 24h
		{"timeout-client", "99999999999s"},  // long number
		{"timeout-server", "1h\tfoo"},       // tab
		{"rise", "0"},                       // zero
		{"rise", "101"},                     // range
		{"rise", "-1"},                      // sign
		{"rise", "+1"},                      //
		{"rise", "1 "},                      //
		{"rise", "1\n"},                     //
		{"rise", "1.0"},                     //
		{"rise", ""},                        //
		{"fall", "99999999999999999999999"}, // overflow
		{"fall", "0x1"},                     //
		{"maxconn", "1000001"},              // range
		{"maxconn", "10000000"},             // eight digits
		{"maxconn", "-0"},                   //
		{"backend-port", "65536"},           // range
		{"backend-port", "80;"},             //
		{"backend-port", "80 # comment"},    //
		{"check", "True"},                   // exact spelling only
		{"check", "1"},                      //
		{"check", "yes"},                    //
		{"check", "true\n"},                 //
		{"check", "Auto"},                   //
		{"check", "auto "},                  //
		{"check", ""},                       //
		{"send-proxy-v2", "on"},             //
		{"accept-proxy", ""},                //
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			key := Prefix + tt.key
			start := Defaults()
			got, errs := Apply(start, map[string]string{key: tt.value})
			if len(errs) != 1 {
				t.Fatalf("got %d errors %v, want 1", len(errs), errs)
			}
			err := errs[0]
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("errors.Is(%v, ErrInvalid) = false", err)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Key != key || fe.Value != tt.value {
				t.Errorf("error %#v does not name key and value", err)
			}
			prefix := "annotation " + key + ": invalid value " + quote(tt.value) + ": want "
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || strings.ContainsAny(msg, "\n\r\x00") {
				t.Errorf("message %q, want prefix %q on one line", msg, prefix)
			}
			if got != start {
				t.Errorf("settings changed on error: %+v", got)
			}
		})
	}
}

func quote(s string) string { return strconv.Quote(s) }

func TestErrorMessage(t *testing.T) {
	_, errs := Apply(Defaults(), map[string]string{Prefix + "check-interval": "2s\nlisten x"})
	want := `annotation haproxy-k8s-sync.io/check-interval: invalid value "2s\nlisten x": want a duration like 500ms, 2s or 1m`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v\nwant %s", errs, want)
	}
	_, errs = Apply(Defaults(), map[string]string{Prefix + "rise": "0"})
	want = `annotation haproxy-k8s-sync.io/rise: invalid value "0": want a whole number from 1 to 100`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v\nwant %s", errs, want)
	}
	_, errs = Apply(Defaults(), map[string]string{Prefix + "timeout-connect": "25h"})
	want = `annotation haproxy-k8s-sync.io/timeout-connect: invalid value "25h": want a duration from 1ms to 24h`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v\nwant %s", errs, want)
	}
}

func TestApplyKeys(t *testing.T) {
	tests := []struct {
		name    string
		ann     map[string]string
		want    func(*Settings)
		errKeys []string // keys named by the errors, in order
		errText string   // substring of the first error
	}{
		{name: "nil map", ann: nil},
		{name: "foreign keys ignored", ann: map[string]string{
			"balance": "bogus", "example.com/balance": "bogus", "haproxy-k8s-sync.io": "x",
		}},
		{name: "enabled is not a setting", ann: map[string]string{EnabledAnnotation: "whatever"}},
		{name: "several valid", ann: map[string]string{
			Prefix + "balance": "source", Prefix + "rise": "5", EnabledAnnotation: "true",
		}, want: func(s *Settings) { s.Balance, s.Rise = "source", 5 }},
		{name: "typo", ann: map[string]string{Prefix + "chek-interval": "2s"},
			errKeys: []string{Prefix + "chek-interval"}, errText: "did you mean haproxy-k8s-sync.io/check-interval?"},
		{name: "unknown", ann: map[string]string{Prefix + "frobnicate": "1"},
			errKeys: []string{Prefix + "frobnicate"}, errText: "unknown setting; known settings are balance, check,"},
		{name: "case matters", ann: map[string]string{Prefix + "Balance": "source"},
			errKeys: []string{Prefix + "Balance"}, errText: "unknown setting"},
		{name: "empty name", ann: map[string]string{Prefix: "x"},
			errKeys: []string{Prefix}, errText: "unknown setting"},
		{name: "all errors, valid ones discarded", ann: map[string]string{
			Prefix + "rise":    "0",
			Prefix + "balance": "source",
			Prefix + "bogus":   "1",
			Prefix + "fall":    "x",
		}, errKeys: []string{Prefix + "bogus", Prefix + "fall", Prefix + "rise"}, errText: "unknown setting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := Defaults()
			want := start
			if tt.want != nil {
				tt.want(&want)
			}
			got, errs := Apply(start, tt.ann)
			if got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
			var keys []string
			for _, err := range errs {
				var fe *FieldError
				if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("unclassified error %v", err)
				}
				keys = append(keys, fe.Key)
			}
			if !reflect.DeepEqual(keys, tt.errKeys) {
				t.Errorf("error keys %q, want %q", keys, tt.errKeys)
			}
			if tt.errText != "" && (len(errs) == 0 || !strings.Contains(errs[0].Error(), tt.errText)) {
				t.Errorf("errors %v, want one containing %q", errs, tt.errText)
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0ms"},
		{-time.Second, "0ms"},
		{time.Microsecond, "1ms"},
		{1500 * time.Microsecond, "2ms"},
		{time.Millisecond, "1ms"},
		{500 * time.Millisecond, "500ms"},
		{1500 * time.Millisecond, "1500ms"},
		{2 * time.Second, "2s"},
		{90 * time.Second, "90s"},
		{time.Minute, "1m"},
		{90 * time.Minute, "90m"},
		{time.Hour, "1h"},
		{24 * time.Hour, "24h"},
		{time.Duration(1<<63 - 1), "9223372036855ms"},
	}
	for _, tt := range tests {
		if got := FormatDuration(tt.d); got != tt.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// Every default must satisfy its own parser, so a flag showing it can be
// given back verbatim.
func TestDefaultsRoundTrip(t *testing.T) {
	d := Defaults()
	for _, f := range fields {
		s := Settings{}
		if err := f.set(&s, f.get(&d)); err != nil {
			t.Errorf("%s: default %q rejected: %v", f.name, f.get(&d), err)
		}
		if f.get(&s) != f.get(&d) {
			t.Errorf("%s: round trip %q -> %q", f.name, f.get(&d), f.get(&s))
		}
	}
}
