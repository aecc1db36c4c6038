package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// The targets of issue 23.
const (
	targetConverge = 5 * time.Second
)

// verdict lists the targets a result breaks, or "ok".
func (r chaosResult) verdict() string {
	var broken []string
	if r.fault.haproxyKept && r.failed-r.failedBeforeDown-r.failedNoEndpoints > 0 {
		broken = append(broken, "failed connections")
	}
	if r.fault.haproxyKept && !r.fault.node && r.cut > 0 {
		broken = append(broken, "established cut")
	}
	if !r.converged || r.converge > targetConverge {
		broken = append(broken, "convergence")
	}
	if r.lost != "" {
		broken = append(broken, "lost/wrong")
	}
	if len(broken) == 0 && !r.fault.haproxyKept {
		return "ok (HAProxy itself down until restarted: the connection targets do not apply)"
	}
	if len(broken) == 0 {
		return "ok"
	}
	return "**breaks: " + strings.Join(broken, ", ") + "**"
}

func (r chaosResult) convergeText() string {
	if !r.converged {
		return fmt.Sprintf("> %v", chaosConverge)
	}
	return r.converge.Round(10 * time.Millisecond).String()
}

func (r chaosResult) row() string {
	lost := r.lost
	if lost == "" {
		lost = "nothing"
	}
	failed := fmt.Sprintf("%d / %d", r.failed, r.total)
	if r.failedBeforeDown > 0 {
		failed += fmt.Sprintf(" (%d to the faulted node before its check failed)", r.failedBeforeDown)
	}
	if r.failedNoEndpoints > 0 {
		failed += fmt.Sprintf(" (%d while the Service's EndpointSlices held no ready endpoint)", r.failedNoEndpoints)
	}
	if len(r.firstFailures) > 0 {
		failed += " (first: " + strings.ReplaceAll(r.firstFailures[0], "|", "/") + ")"
	}
	return fmt.Sprintf("| %s | %s | %d / %d | %s | %s | %s | %s | %s |", r.fault.name, failed, r.cut, r.established,
		r.convergeText(), r.reloads, strings.ReplaceAll(lost, "|", "/"), r.verdict(), strings.ReplaceAll(r.notes, "|", "/"))
}

// writeReliability writes the table, with the date, machine and commit,
// between the markers of docs/reliability.md (the prose around them is
// kept; a missing file gets a heading).
func writeReliability(path string, results []chaosResult) error {
	var b strings.Builder
	commit, _ := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	dirty := ""
	if out, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); len(out) > 0 {
		dirty = " (with uncommitted changes)"
	}
	host, _ := os.Hostname()
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	fmt.Fprintf(&b, "Measured %s on %s (%s/%s, %d CPUs, kernel %s), commit %s%s, by `make chaos`.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), host, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
		strings.TrimSpace(string(kernel)), strings.TrimSpace(string(commit)), dirty)
	b.WriteString("| fault | failed new connections / made | established cut / kept | convergence after undo | reloads | lost or left wrong | targets | notes |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		b.WriteString(r.row() + "\n")
	}
	const begin, end = "<!-- chaos table: begin (make chaos writes it) -->\n", "<!-- chaos table: end -->\n"
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	doc := string(old)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		doc = "# Reliability\n\n" + begin + end + doc
		i, j = strings.Index(doc, begin), strings.Index(doc, end)
	}
	doc = doc[:i+len(begin)] + b.String() + doc[j:]
	return os.WriteFile(path, []byte(doc), 0o644)
}
