package haproxy

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Check runs `<bin> -c -q -f <cfgPath>`. It returns nil when HAProxy accepts
// the configuration, an error wrapping ErrInvalidConfig carrying HAProxy's
// trimmed output when it rejects it, and another error when bin could not
// be run at all.
//
// HAProxy 2.6 prints nothing at all with -q, errors included, so a rejected
// configuration is checked a second time without -q to collect the reasons.
func Check(ctx context.Context, bin, cfgPath string) error {
	out, err := runCheck(ctx, bin, "-c", "-q", "-f", cfgPath)
	if err == nil {
		return nil
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		return err
	}
	msg := strings.TrimSpace(out)
	if msg == "" {
		if out2, err2 := runCheck(ctx, bin, "-c", "-f", cfgPath); err2 != nil {
			msg = diagnostics(out2)
		}
	}
	if msg == "" {
		msg = exitErr.String()
	}
	return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, cfgPath, msg)
}

func runCheck(ctx context.Context, bin string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err == nil {
		return string(out), nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return "", fmt.Errorf("haproxy: checking %s: %w", args[len(args)-1], ctxErr)
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		return "", fmt.Errorf("haproxy: running %s: %w", bin, err)
	}
	return string(out), err
}

// diagnostics drops HAProxy's [NOTICE] banner lines (version, executable
// path) and keeps the alerts and warnings, trimmed.
func diagnostics(out string) string {
	var keep []string
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "[NOTICE]") {
			keep = append(keep, line)
		}
	}
	if len(keep) == 0 {
		return strings.TrimSpace(out)
	}
	return strings.Join(keep, "\n")
}

// Explain is what `<bin> -c -f <cfgPath>` says against the file: its
// [ALERT] lines (AlertLines), "" when it accepts the file. It is how a
// failed reload of a master that does not answer with the startup logs
// (2.6), or whose output `quiet` closed, gets its reason: the master
// parsed the same file. A reload can also fail in what only a start does
// (a bind, the open-file limit), which -c does not try: then "" too.
// -V: a file with `quiet` in global silences -c too (2.6 and 3.4), and
// verbose mode overrides it.
func Explain(ctx context.Context, bin, cfgPath string) (string, error) {
	out, err := runCheck(ctx, bin, "-c", "-V", "-f", cfgPath)
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return "", err
	}
	return AlertLines(out), nil
}
