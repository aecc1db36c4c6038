package nodes

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// sweepStale removes what a test process killed before its cleanup ran
// (a test binary's timeout panic) left behind: its tiers' namespaces are
// named hkn<PID>-<N>-... and its cgroups hkn<PID>-<N>-cg. For every such
// PID that no longer runs, it kills the processes in those namespaces and
// cgroups (containerd's shims, the containers), removes the cgroups and
// deletes the namespaces. A live PID's tiers are left alone.
func sweepStale() error {
	ents, err := os.ReadDir("/run/netns")
	if err != nil {
		return nil // no namespaces at all
	}
	stale := map[string][]string{} // prefix -> namespace names
	for _, e := range ents {
		prefix, pid, ok := tierPrefix(e.Name())
		if !ok || pid == os.Getpid()%100000 || alive(pid) {
			continue
		}
		stale[prefix] = append(stale[prefix], e.Name())
	}
	if len(stale) == 0 {
		return nil
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	var errs []string
	for prefix, names := range stale {
		for _, ns := range names {
			for _, pid := range inNetNS("/run/netns/" + ns) {
				killPID(pid)
			}
		}
		for _, m := range mounts {
			for _, dir := range findDirs(m, prefix+"cg", 5) {
				c := &cgroups{mounts: []string{m}, root: strings.TrimPrefix(dir, m)}
				if err := c.remove(); err != nil {
					errs = append(errs, err.Error())
				}
			}
		}
		for _, ns := range names {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Sprintf("ip netns del %s: %v: %s", ns, err, out))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("stale tiers: %s", strings.Join(errs, "; "))
	}
	return nil
}

// tierPrefix parses a namespace name hkn<PID>-<N>-<suffix>.
func tierPrefix(name string) (prefix string, pid int, ok bool) {
	rest, found := strings.CutPrefix(name, "hkn")
	if !found {
		return "", 0, false
	}
	p, rest, found := strings.Cut(rest, "-")
	if !found {
		return "", 0, false
	}
	n, _, found := strings.Cut(rest, "-")
	if !found {
		return "", 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, false
	}
	if _, err := strconv.Atoi(n); err != nil {
		return "", 0, false
	}
	return "hkn" + p + "-" + n + "-", pid, true
}

// alive reports whether some process's PID is pid modulo 100000 (names
// carry the PID so), conservatively: any match counts.
func alive(pid int) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if p, err := strconv.Atoi(e.Name()); err == nil && p%100000 == pid {
			return true
		}
	}
	return false
}

// inNetNS lists the processes whose network namespace is the one bound
// at path.
func inNetNS(path string) []int {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return nil
	}
	want := fmt.Sprintf("net:[%d]", st.Ino)
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/net"); err == nil && l == want {
			out = append(out, p)
		}
	}
	return out
}

// findDirs lists directories called name below root, at most depth deep.
func findDirs(root, name string, depth int) []string {
	var out []string
	base := strings.Count(root, string(filepath.Separator))
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.Count(p, string(filepath.Separator))-base > depth {
			return filepath.SkipDir
		}
		if d.Name() == name {
			out = append(out, p)
			return filepath.SkipDir
		}
		return nil
	})
	return out
}
