package haproxy

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// ErrUnsupported: the HAProxy binary is older than the supported range, or
// built without a feature the controller relies on.
var ErrUnsupported = errors.New("haproxy: unsupported build")

// The oldest release the controller supports: the master CLI, `show proc`,
// the server-state file and the Runtime API commands it uses as 2.6 has
// them (docs/testing.md lists the versions the suite runs).
const minMajor, minMinor = 2, 6

// Required are the build features the controller relies on, by their names
// in `haproxy -vv`'s "Feature list", with what needs them.
var Required = []struct{ Feature, For string }{
	{"TPROXY", "transparent binds (an address the host does not hold yet)"},
	{"OPENSSL", "TLS health checks (check-ssl, client certificates)"},
}

// Build is what `haproxy -vv` says about a binary.
type Build struct {
	Version  Version
	Features map[string]bool // "Feature list": +NAME true, -NAME false
}

// Inspect runs `bin -vv` and parses its output.
func Inspect(ctx context.Context, bin string) (Build, error) {
	ctx, cancel := WithDefaultTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-vv").Output()
	if err != nil {
		return Build{}, fmt.Errorf("haproxy: running %s -vv: %w", bin, err)
	}
	b, err := ParseBuild(string(out))
	if err != nil {
		return Build{}, fmt.Errorf("%s -vv: %w", bin, err)
	}
	return b, nil
}

// ParseBuild reads `haproxy -vv`: the version from its first line
// ("HAProxy version 3.0.11-1+deb13u4 2026/10/15 - https://haproxy.org/",
// "HA-Proxy" before 2.0) and the "Feature list" line. Output without a
// version is an error wrapping ErrCommand; a missing feature list leaves
// Features empty (Supported then names every required feature).
func ParseBuild(out string) (Build, error) {
	var b Build
	b.Features = map[string]bool{}
	found := false
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if rest, ok := cutAny(line, "HAProxy version ", "HA-Proxy version "); ok && !found {
			f := strings.Fields(rest)
			if len(f) == 0 {
				continue
			}
			v, err := ParseVersion(f[0])
			if err != nil {
				return Build{}, err
			}
			b.Version, found = v, true
			continue
		}
		if rest, ok := strings.CutPrefix(line, "Feature list :"); ok {
			for _, f := range strings.Fields(rest) {
				if name, ok := strings.CutPrefix(f, "+"); ok && name != "" {
					b.Features[name] = true
				} else if name, ok := strings.CutPrefix(f, "-"); ok && name != "" {
					b.Features[name] = false
				}
			}
		}
	}
	if !found {
		return Build{}, fmt.Errorf("%w: no \"HAProxy version\" line in haproxy -vv's output", ErrCommand)
	}
	return b, nil
}

func cutAny(s string, prefixes ...string) (string, bool) {
	for _, p := range prefixes {
		if rest, ok := strings.CutPrefix(s, p); ok {
			return rest, true
		}
	}
	return "", false
}

// Supported returns nil for a release in the supported range built with
// every Required feature, else an error wrapping ErrUnsupported that names
// the version and what is missing.
func (b Build) Supported() error {
	var why []string
	if !b.Version.AtLeast(minMajor, minMinor) {
		why = append(why, fmt.Sprintf("older than %d.%d, the oldest supported", minMajor, minMinor))
	}
	for _, r := range Required {
		if !b.Features[r.Feature] {
			why = append(why, fmt.Sprintf("built without %s (needed for %s)", r.Feature, r.For))
		}
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w: HAProxy %s: %s", ErrUnsupported, b.Version, strings.Join(why, "; "))
}
