package nodes

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroups is the tier's own cgroup in every mounted hierarchy: below the
// test process's own cgroup (the deepest of its paths, so that nothing the
// tier runs leaves the cgroups the test runs in), one directory per tier.
// Each node's kubelet gets cgroupRoot <root>/<node> (kubepods below it).
type cgroups struct {
	mounts  []string // the hierarchies' mount points
	root    string   // the tier's cgroup path, the same in every hierarchy
	created []string // directories made, to remove (deepest last)
}

// cgroupMounts lists the mount points of cgroup (v1) and cgroup2
// hierarchies.
func cgroupMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// ... mount point (4) ... optional fields, "-", fstype, source, options
		i := slices.Index(fields, "-")
		if i < 0 || i+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if t := fields[i+1]; t == "cgroup" || t == "cgroup2" {
			out = append(out, fields[4])
		}
	}
	return out, sc.Err()
}

// ownCgroup returns the deepest cgroup path of this process.
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	best := "/"
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) == 3 && len(parts[2]) > len(best) {
			best = parts[2]
		}
	}
	return best, nil
}

func newCgroups(name string) (*cgroups, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	if len(mounts) == 0 {
		return nil, fmt.Errorf("no cgroup hierarchy mounted")
	}
	own, err := ownCgroup()
	if err != nil {
		return nil, err
	}
	c := &cgroups{mounts: mounts, root: filepath.Join(own, name)}
	for _, m := range mounts {
		if err := c.mkdirAll(m, c.root); err != nil {
			c.remove()
			return nil, err
		}
	}
	return c, nil
}

// mkdirAll makes path in the hierarchy at mount, remembering what it made;
// new cpuset cgroups get their parent's cpus and mems (a v1 cpuset cgroup
// without them takes no tasks).
func (c *cgroups) mkdirAll(mount, path string) error {
	dir := mount
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		parent := dir
		dir = filepath.Join(dir, part)
		if _, err := os.Stat(dir); err == nil {
			continue
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %w", dir, err)
		}
		c.created = append(c.created, dir)
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(parent, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return fmt.Errorf("cgroup %s: %s: %w", dir, f, err)
				}
			}
		}
	}
	return nil
}

// pids lists the processes in the tier's cgroups (every hierarchy, every
// level below the root).
func (c *cgroups) pids() []int {
	seen := map[int]bool{}
	for _, m := range c.mounts {
		_ = filepath.WalkDir(filepath.Join(m, c.root), func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			if err != nil {
				return nil
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	out := make([]int, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	return out
}

// remove kills what still runs in the tier's cgroups and removes every
// cgroup below and including the root (what kubelet and runc made too),
// then the parents this tier made. It reports what it could not remove.
func (c *cgroups) remove() error {
	for _, pid := range c.pids() {
		killPID(pid)
	}
	var left []string
	for _, m := range c.mounts {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(m, c.root), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		// Deepest first.
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := rmdirRetry(dirs[i]); err != nil {
				left = append(left, dirs[i])
			}
		}
	}
	for i := len(c.created) - 1; i >= 0; i-- {
		// Parents another tier may still use: removed only when empty.
		_ = syscall.Rmdir(c.created[i])
	}
	if len(left) > 0 {
		return fmt.Errorf("cgroups left: %v", left)
	}
	return nil
}

// rmdirRetry removes a cgroup, retrying while the kernel still counts
// exiting tasks in it (EBUSY), for a bounded time.
func rmdirRetry(dir string) error {
	deadline := time.Now().Add(killWait)
	for {
		err := syscall.Rmdir(dir)
		if err == nil || os.IsNotExist(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(pollEvery) // poll interval, not synchronisation
	}
}
