package lab

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// ProcessesNaming lists the processes (other than this one) whose command
// line contains s, as "PID: command line": after a program stopped, the
// children it started with paths under its work directory must be gone.
func ProcessesNaming(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	self := strconv.Itoa(os.Getpid())
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(s)) {
			out = append(out, e.Name()+": "+string(bytes.TrimSpace(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))))
		}
	}
	return out
}

// KillProcessesNaming kills what ProcessesNaming(s) lists (a test's
// cleanup after a failure).
func KillProcessesNaming(s string) {
	for _, l := range ProcessesNaming(s) {
		pid, _, _ := bytes.Cut([]byte(l), []byte(":"))
		if n, err := strconv.Atoi(string(pid)); err == nil {
			_ = syscall.Kill(n, syscall.SIGKILL)
		}
	}
}
