// Package runas lets a process started as root go on as another user
// with a few capabilities and nothing else: it replaces itself (execve)
// as that user, the capabilities kept as ambient ones, which a program
// run by a non-root user keeps across exec even under no_new_privs
// (allowPrivilegeEscalation: false). Kubernetes gives a non-root
// container's added capabilities no effect (it sets no ambient ones), so
// this is how a container that must hold CAP_NET_ADMIN and CAP_NET_RAW
// (the layer 2 announcer) still runs as the user whose files and
// sockets it shares (HAProxy's): it starts as root with those two,
// CAP_SETUID and CAP_SETGID only, and execs itself as that user.
package runas

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrNotRoot: the process is neither root nor the user asked for.
var ErrNotRoot = errors.New("runas: not started as root")

// Effective reports which of caps the calling thread has effective.
func Effective(caps []uintptr) ([]uintptr, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return nil, err
	}
	var out []uintptr
	for _, c := range caps {
		if data[c/32].Effective&(1<<(c%32)) != 0 {
			out = append(out, c)
		}
	}
	return out, nil
}

// Exec replaces the process with path (argv, env) run as uid and gid
// (its only group), keeping caps (each held now) as ambient
// capabilities and no other. It returns only on failure. A process
// already running as uid does nothing and returns nil: the exec'd
// program calls Exec again with the same arguments.
func Exec(uid, gid int, caps []uintptr, path string, argv, env []string) error {
	if unix.Geteuid() == uid && unix.Getuid() == uid {
		return nil
	}
	if unix.Geteuid() != 0 {
		return fmt.Errorf("%w: uid %d, want 0 or %d", ErrNotRoot, unix.Geteuid(), uid)
	}
	have, err := Effective(caps)
	if err != nil {
		return fmt.Errorf("runas: %w", err)
	}
	if len(have) != len(caps) {
		return fmt.Errorf("runas: %d of the %d capabilities to keep are not held (the container's securityContext must add them)", len(caps)-len(have), len(caps))
	}
	// Credentials and the keep-capabilities flag are per thread; the
	// set*id calls below change every thread (Go does that), the
	// capabilities and the exec are this thread's.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_KEEPCAPS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("runas: keep capabilities: %w", err)
	}
	if err := syscall.Setgroups([]int{gid}); err != nil {
		return fmt.Errorf("runas: groups: %w", err)
	}
	if err := syscall.Setresgid(gid, gid, gid); err != nil {
		return fmt.Errorf("runas: gid %d: %w", gid, err)
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		return fmt.Errorf("runas: uid %d: %w", uid, err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	for _, c := range caps {
		bit := uint32(1) << (c % 32)
		data[c/32].Effective |= bit
		data[c/32].Permitted |= bit
		data[c/32].Inheritable |= bit
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("runas: capabilities: %w", err)
	}
	for _, c := range caps {
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, c, 0, 0); err != nil {
			return fmt.Errorf("runas: ambient capability %d: %w", c, err)
		}
	}
	return fmt.Errorf("runas: exec %s: %w", path, unix.Exec(path, argv, env))
}
