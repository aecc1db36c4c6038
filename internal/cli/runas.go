package cli

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/runas"
)

// runAs is --announce-run-as: a process started as root execs itself as
// UID:GID keeping CAP_NET_ADMIN and CAP_NET_RAW, and nothing else
// (runas.Exec); the process it becomes finds itself that user already
// and goes on. Empty: nothing.
func runAs(spec string) error {
	if spec == "" {
		return nil
	}
	u, g, ok := strings.Cut(spec, ":")
	uid, uerr := strconv.Atoi(u)
	gid, gerr := strconv.Atoi(g)
	if !ok || uerr != nil || gerr != nil || uid <= 0 || gid < 0 {
		return flagErr("--announce-run-as: %q: want UID:GID, the user not root", spec)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return runas.Exec(uid, gid, []uintptr{unix.CAP_NET_ADMIN, unix.CAP_NET_RAW}, exe, os.Args, os.Environ())
}
