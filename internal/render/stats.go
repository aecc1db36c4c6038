package render

import (
	"errors"
	"fmt"
	"regexp"
)

// StatsFrontend serves HAProxy's stats page (StatsURI, with ";csv" for
// CSV) and its built-in Prometheus exporter (StatsMetricsURI). The "_"
// keeps it apart from Service frontends.
const (
	StatsFrontend   = "_stats"
	StatsUserlist   = "_stats_users"
	StatsURI        = "/stats"
	StatsMetricsURI = "/metrics"
	StatsRealm      = "haproxy-k8s-sync"
)

// StatsAuth is the one user of the stats page; an empty User means no
// authentication.
type StatsAuth struct {
	User     string
	Password string
}

var (
	statsUser     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	statsPassword = regexp.MustCompile(`^[A-Za-z0-9!%&()*+,./:;<=>?@\[\]^_{|}~-]{8,128}$`)
)

// ErrStatsAuth classifies invalid stats credentials.
var ErrStatsAuth = errors.New("invalid stats credentials")

// Validate checks a's grammar: what reaches haproxy.cfg can carry no
// HAProxy syntax (no blank, quote, backslash, '#' or '$'). The error never
// contains the password.
func (a StatsAuth) Validate() error {
	if !statsUser.MatchString(a.User) {
		return fmt.Errorf("%w: the user must be 1-64 letters, digits, '.', '_' or '-'", ErrStatsAuth)
	}
	if !statsPassword.MatchString(a.Password) {
		return fmt.Errorf("%w: the password must be 8-128 characters: letters, digits and punctuation other than quotes, '\\', '#', '$' and '`'", ErrStatsAuth)
	}
	return nil
}

// writeStats renders the stats frontend when opts.Stats has a port. With
// credentials, a userlist protects every path (the page and the exporter)
// with basic authentication. The caller validated opts.StatsAuth.
func writeStats(w func(...string), opts Options) {
	if opts.Stats.Port == 0 {
		return
	}
	auth := opts.StatsAuth.User != ""
	if auth {
		w("")
		w("userlist", StatsUserlist)
		w("\tuser", opts.StatsAuth.User, "insecure-password", opts.StatsAuth.Password)
	}
	w("")
	w("frontend", StatsFrontend)
	w("\tmode http")
	w("\tbind", bindAddr(opts.Stats))
	w("\ttimeout http-request 10s")
	if auth {
		w("\thttp-request auth realm", StatsRealm, "unless { http_auth("+StatsUserlist+") }")
	}
	w("\thttp-request use-service prometheus-exporter if { path", StatsMetricsURI, "}")
	w("\tstats enable")
	w("\tstats uri", StatsURI)
	w("\tstats refresh 10s")
	// Servers are slots (s1, s2...): their addresses tell which node or
	// pod each one is (the page's tooltips, the CSV's addr column).
	w("\tstats show-legends")
}

// HasSecrets reports whether a config rendered with opts carries
// credentials (its file must not be readable by others).
func (opts Options) HasSecrets() bool { return opts.Stats.Port != 0 && opts.StatsAuth.User != "" }
