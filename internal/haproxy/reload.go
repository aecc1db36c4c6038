package haproxy

import (
	"fmt"
	"strings"
)

// ReloadResult is what a reload did, as the master reported it. A caller
// reads it on failure too: the reasons are in Log.
type ReloadResult struct {
	// Version is the master's, from the `show proc` read before the reload
	// (zero when the master did not print one).
	Version Version
	// Answered: the master reported the outcome itself ("Success=1|0",
	// 2.7+); otherwise the reload was confirmed by polling `show proc`
	// (2.6, or a 2.7+ answer that did not arrive whole).
	Answered bool
	// Log holds the startup log lines the master answered with (2.7+), as
	// HAProxy printed them: a failed reload's reasons are its [ALERT]
	// lines. 2.6's master has no startup logs on its CLI: nil there.
	Log []string
	// Workers are the workers `show proc` listed once the reload was
	// confirmed (nil after a failure, or when it could not be read): the
	// new configuration's. Until the previous worker stops listening,
	// the stats socket may still reach it.
	Workers []int
}

// Alerts returns the [ALERT] lines of r.Log without their "[ALERT] (PID) :"
// prefix (the same rule as AlertLines).
func (r ReloadResult) Alerts() []string {
	var out []string
	for _, l := range r.Log {
		if a, ok := alertText(l); ok {
			out = append(out, a)
		}
	}
	return out
}

// reasons is the alerts of a failed reload for an error message: the first
// few, or the last lines when there is no alert.
func reasons(r ReloadResult) string {
	const most = 8
	lines := r.Alerts()
	if len(lines) == 0 {
		lines = r.Log[max(0, len(r.Log)-3):]
	}
	if len(lines) > most {
		lines = append(lines[:most:most], fmt.Sprintf("(%d more)", len(lines)-most))
	}
	if len(lines) == 0 {
		return "no startup logs"
	}
	return strings.Join(lines, "; ")
}

// ParseReloadAnswer reads a 2.7+ master's answer to "reload":
//
//	Success=1
//	--
//	[NOTICE]   (7524) : Loading success.
//
// ok is the outcome, log the lines after "--". A 3.1+ master refusing a
// reload while a new worker is still starting answers
//
//	Success=0
//	--
//	Another reload is still in progress.
//
// (src/mworker.c, cli_parse_reload): nothing was reloaded, so that is no
// failed reload but an error wrapping ErrReloadInProgress. Any other
// answer wraps ErrCommand.
func ParseReloadAnswer(out string) (ok bool, log []string, err error) {
	first, rest, _ := strings.Cut(strings.TrimSpace(out), "\n")
	first = strings.TrimSpace(first)
	switch first {
	case "Success=1":
		ok = true
	case "Success=0":
	default:
		if busyLine(first) {
			return false, nil, fmt.Errorf("%w: %s", ErrReloadInProgress, first)
		}
		return false, nil, fmt.Errorf("%w: reload: unexpected answer %q", ErrCommand, first)
	}
	for line := range strings.Lines(rest) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" || (log == nil && strings.TrimSpace(line) == "--") {
			continue
		}
		log = append(log, line)
	}
	if !ok && len(log) == 1 && busyLine(log[0]) {
		return false, nil, fmt.Errorf("%w: %s", ErrReloadInProgress, strings.TrimSpace(log[0]))
	}
	return ok, log, nil
}

// busyLine reports whether line is a 3.1+ master's refusal of a reload
// while another is loading (not a startup log line, which starts with
// its level: "[NOTICE]", "[ALERT]", ...).
func busyLine(line string) bool {
	line = strings.TrimSpace(line)
	return !strings.HasPrefix(line, "[") && strings.Contains(strings.ToLower(line), "reload is still in progress")
}
