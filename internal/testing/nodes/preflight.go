package nodes

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Preflight says why this machine cannot run the tier, or nil: root,
// the commands it runs (Debian: containerd, runc, containernetworking-
// plugins, nftables, iproute2, util-linux), and mounted cgroups.
func Preflight() error {
	var errs []error
	if os.Geteuid() != 0 {
		errs = append(errs, errors.New("not root (network namespaces, containerd and kubelet need root; CI runs as root)"))
	}
	path := os.Getenv("PATH") + ":/usr/local/sbin:/usr/sbin:/sbin"
	for _, c := range []string{"ip", "nsenter", "unshare", "mount", "containerd", "containerd-shim-runc-v2", "ctr", "runc", "nft"} {
		if lookIn(path, c) == "" {
			errs = append(errs, fmt.Errorf("no %s command (apt-get install containerd runc nftables iproute2 util-linux; make deps)", c))
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join("/usr/lib/cni", p)); err != nil {
			errs = append(errs, fmt.Errorf("no CNI plugin %s in /usr/lib/cni (apt-get install containernetworking-plugins)", p))
		}
	}
	if m, err := cgroupMounts(); err != nil || len(m) == 0 {
		errs = append(errs, fmt.Errorf("no cgroup hierarchy mounted (%v)", err))
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		errs = append(errs, fmt.Errorf("no network namespaces: %v", err))
	}
	return errors.Join(errs...)
}

func lookIn(path, cmd string) string {
	for _, d := range strings.Split(path, ":") {
		if d == "" {
			continue
		}
		p := filepath.Join(d, cmd)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if p, err := exec.LookPath(cmd); err == nil {
		return p
	}
	return ""
}
