package settings

import (
	"strconv"
	"strings"
	"time"
)

// field describes one setting: its name (the annotation key without Prefix,
// from which the flag and environment variable names are derived), a strict
// parser writing into Settings, and a formatter reading it back.
type field struct {
	name   string
	usage  string
	isBool bool
	set    func(s *Settings, value string) error // error message is the reason only
	get    func(s *Settings) string
}

// fields lists every setting in documentation order.
var fields = []field{
	{
		name:  "balance",
		usage: "load-balancing algorithm: " + strings.Join(balances, ", "),
		set: func(s *Settings, v string) error {
			b, err := parseBalance(v)
			if err == nil {
				s.Balance = b
			}
			return err
		},
		get: func(s *Settings) string { return s.Balance },
	},
	{
		name: "check", isBool: true, // a bare --default-check is true
		usage: "health check of each server on its own port: auto (in node mode, the servers follow their node and its --node-check when there is one; checked by themselves otherwise), true or false",
		set: func(s *Settings, v string) error {
			m, err := ParseCheckMode(v)
			if err == nil {
				s.Check = m
			}
			return err
		},
		get: func(s *Settings) string { return s.Check.String() },
	},
	durationField("check-interval", "interval between health checks",
		100*time.Millisecond, time.Hour, func(s *Settings) *time.Duration { return &s.CheckInterval }),
	intField("rise", "consecutive successful checks to mark a server up",
		1, 100, false, func(s *Settings) *int { return &s.Rise }),
	intField("fall", "consecutive failed checks to mark a server down",
		1, 100, false, func(s *Settings) *int { return &s.Fall }),
	boolField("send-proxy-v2", "send the PROXY protocol v2 header to the servers (and to health checks)",
		func(s *Settings) *bool { return &s.SendProxyV2 }),
	boolField("accept-proxy", "require the PROXY protocol header from clients on the frontend",
		func(s *Settings) *bool { return &s.AcceptProxy }),
	durationField("timeout-connect", "timeout for connecting to a server",
		time.Millisecond, 24*time.Hour, func(s *Settings) *time.Duration { return &s.TimeoutConnect }),
	durationField("timeout-client", "client-side inactivity timeout",
		time.Millisecond, 24*time.Hour, func(s *Settings) *time.Duration { return &s.TimeoutClient }),
	durationField("timeout-server", "server-side inactivity timeout",
		time.Millisecond, 24*time.Hour, func(s *Settings) *time.Duration { return &s.TimeoutServer }),
	intField("maxconn", "frontend connection limit (0: unset)",
		1, 1000000, true, func(s *Settings) *int { return &s.MaxConn }),
	intField("backend-port", "port to send traffic to on every server, overriding the endpoint port (0: none)",
		1, 65535, true, func(s *Settings) *uint16 { return &s.BackendPort }),
}

func boolField(name, usage string, p func(*Settings) *bool) field {
	return field{
		name: name, usage: usage, isBool: true,
		set: func(s *Settings, v string) error {
			b, err := parseBool(v)
			if err == nil {
				*p(s) = b
			}
			return err
		},
		get: func(s *Settings) string { return strconv.FormatBool(*p(s)) },
	}
}

func durationField(name, usage string, lo, hi time.Duration, p func(*Settings) *time.Duration) field {
	return field{
		name: name, usage: usage,
		set: func(s *Settings, v string) error {
			d, err := parseDuration(v, lo, hi)
			if err == nil {
				*p(s) = d
			}
			return err
		},
		get: func(s *Settings) string { return FormatDuration(*p(s)) },
	}
}

// intField accepts lo..hi, and also 0 (meaning unset) when zeroOK.
func intField[T int | uint16](name, usage string, lo, hi int, zeroOK bool, p func(*Settings) *T) field {
	return field{
		name: name, usage: usage,
		set: func(s *Settings, v string) error {
			n, err := parseInt(v, lo, hi, zeroOK)
			if err == nil {
				*p(s) = T(n)
			}
			return err
		},
		get: func(s *Settings) string { return strconv.Itoa(int(*p(s))) },
	}
}

// reasonError is the error of a parser: just the reason, classified as
// ErrInvalid. Apply and FromEnv wrap it into a FieldError; flag.FlagSet adds
// the flag name and value itself.
type reasonError string

func (e reasonError) Error() string        { return string(e) }
func (e reasonError) Is(target error) bool { return target == ErrInvalid }

const maxDigits = 7

// digits reports whether v is 1..maxDigits ASCII digits.
func digits(v string) bool {
	if v == "" || len(v) > maxDigits {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

func parseBool(v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, reasonError("want true or false")
}

func parseBalance(v string) (string, error) {
	for _, b := range balances {
		if v == b {
			return b, nil
		}
	}
	return "", reasonError("want one of " + strings.Join(balances, ", "))
}

func parseInt(v string, lo, hi int, zeroOK bool) (int, error) {
	want := "want a whole number from " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi)
	if zeroOK {
		want += ", or 0 for unset"
	}
	if !digits(v) {
		return 0, reasonError(want)
	}
	n, err := strconv.Atoi(v)
	if err != nil || !(n >= lo && n <= hi || zeroOK && n == 0) {
		return 0, reasonError(want)
	}
	return n, nil
}

// durationUnits lists the accepted suffixes, longest first so that "ms" is
// not taken for "m".
var durationUnits = []struct {
	suffix string
	unit   time.Duration
}{
	{"ms", time.Millisecond},
	{"h", time.Hour},
	{"m", time.Minute},
	{"s", time.Second},
}

// parseDuration accepts ^[0-9]{1,7}(ms|s|m|h)$ within lo..hi.
func parseDuration(v string, lo, hi time.Duration) (time.Duration, error) {
	for _, u := range durationUnits {
		num, ok := strings.CutSuffix(v, u.suffix)
		if !ok {
			continue
		}
		if !digits(num) {
			break
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			break
		}
		// Compare in the value's own unit first: 9999999h overflows int64 ns.
		if n > int64(hi/u.unit)+1 {
			return 0, rangeError(lo, hi)
		}
		d := time.Duration(n) * u.unit
		if d < lo || d > hi {
			return 0, rangeError(lo, hi)
		}
		return d, nil
	}
	return 0, reasonError("want a duration like 500ms, 2s or 1m")
}

func rangeError(lo, hi time.Duration) error {
	return reasonError("want a duration from " + FormatDuration(lo) + " to " + FormatDuration(hi))
}

// FormatDuration renders d in HAProxy time syntax using the largest unit
// among ms, s, m and h that represents it exactly: 500ms, 2s, 1m, 24h.
// Sub-millisecond remainders are rounded up (HAProxy counts in ms, and a
// timeout must not round down to 0, which means "none"); d <= 0 gives "0ms".
func FormatDuration(d time.Duration) string {
	if d <= 0 {
		return "0ms"
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	switch {
	case ms%3_600_000 == 0:
		return strconv.FormatInt(ms/3_600_000, 10) + "h"
	case ms%60_000 == 0:
		return strconv.FormatInt(ms/60_000, 10) + "m"
	case ms%1000 == 0:
		return strconv.FormatInt(ms/1000, 10) + "s"
	}
	return strconv.FormatInt(ms, 10) + "ms"
}
