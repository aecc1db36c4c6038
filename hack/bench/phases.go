package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"
)

// The controller logs one "update" line per pass that changed something,
// with the time of each phase (log/slog text format):
//   msg=update services=10001 ... parse=187ms render=90ms check=1.9s
//   write=291ms reload=4.0s runtime=0s ops=0 total=6.8s reloaded=true reasons="[...]"
// (a pass that held a reload back says reload_in=300ms instead).

// update is one such line.
type update struct {
	fields   map[string]string
	reloaded bool
}

var updateMsg = regexp.MustCompile(`(^|\s)msg=update(\s|$)`)

var logField = regexp.MustCompile(`(\w+)=("(?:[^"\\]|\\.)*"|\S+)`)

func parseUpdate(line string) (update, bool) {
	if !updateMsg.MatchString(line) {
		return update{}, false
	}
	u := update{fields: map[string]string{}}
	for _, m := range logField.FindAllStringSubmatch(line, -1) {
		u.fields[m[1]] = m[2]
	}
	u.reloaded = u.fields["reloaded"] == "true"
	return u, true
}

// phaseNames are the phases of a pass, in order, as the log names them.
var phaseNames = []string{"parse", "render", "check", "write", "reload", "runtime", "total"}

func (u update) String() string {
	var b strings.Builder
	for _, k := range phaseNames {
		fmt.Fprintf(&b, "%s %s  ", k, roundDur(u.fields[k]))
	}
	if n := u.fields["ops"]; n != "" && n != "0" {
		b.WriteString("ops " + n + "  ")
	}
	if r := u.fields["reload_in"]; r != "" {
		b.WriteString("reload deferred " + roundDur(r) + "  ")
	}
	if r := u.fields["reasons"]; r != "" {
		if len(r) > 120 {
			r = r[:120] + "...\""
		}
		b.WriteString("reasons " + r)
	}
	if e := u.fields["err"]; e != "" {
		b.WriteString("err " + e)
	}
	return strings.TrimSpace(b.String())
}

func roundDur(s string) string {
	d, err := time.ParseDuration(s)
	if err != nil {
		return s
	}
	return d.Round(time.Millisecond).String()
}

// logMark is where a log file ends now: the updates after it are the ones
// a step caused.
func logMark(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// updatesSince reads the update lines written to path after mark.
func updatesSince(path string, mark int64) ([]update, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(mark, io.SeekStart); err != nil {
		return nil, err
	}
	var out []update
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20) // reasons of a burst are long
	for sc.Scan() {
		if u, ok := parseUpdate(sc.Text()); ok {
			out = append(out, u)
		}
	}
	return out, sc.Err()
}

// reloadUpdates waits (at most limit) until the log after mark holds the
// update lines of n reloads (the line follows the reload by the
// corrections after it), and returns every update line after mark.
func reloadUpdates(ctx context.Context, path string, mark int64, n int, limit time.Duration) ([]update, error) {
	deadline := time.Now().Add(limit)
	for {
		us, err := updatesSince(path, mark)
		if err != nil {
			return nil, err
		}
		got := 0
		for _, u := range us {
			if u.reloaded {
				got++
			}
		}
		if got >= n || time.Now().After(deadline) {
			return us, nil
		}
		if err := pause(ctx, 100*time.Millisecond); err != nil {
			return us, err
		}
	}
}

// reloadLines are the controller's update lines of the run's reloads
// (n: the master's count since HAProxy started, waited for at most 10 s),
// each with its time and phases, as they are logged.
func reloadLines(ctx context.Context, path string, n int) ([]string, error) {
	us, err := reloadUpdates(ctx, path, 0, n, 10*time.Second)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, u := range us {
		if u.reloaded {
			out = append(out, u.fields["time"]+" "+u.String())
		}
	}
	logf("reloads of the run: %d counted by the master, %d in the controller's log", n, len(out))
	for _, l := range out {
		logf("  reload: %s", l)
	}
	return out, nil
}
