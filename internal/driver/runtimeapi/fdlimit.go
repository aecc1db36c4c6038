package runtimeapi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// ErrFDLimit: the configuration a reload would load needs more open
// files than HAProxy may have; HAProxy would refuse it (`Cannot raise FD
// limit`) while `haproxy -c` passes.
var ErrFDLimit = errors.New("configuration needs more open files than HAProxy may have")

// ReasonFDLimit is the Event reason of a Service whose change waits for
// a reload refused for ErrFDLimit.
const ReasonFDLimit = "FileDescriptorLimit"

// fdsWayOut is what an operator can do about ErrFDLimit.
const fdsWayOut = "raise HAProxy's open-file limit (LimitNOFILE= of its systemd unit; in a Pod, the container runtime's own, " +
	"e.g. LimitNOFILE= of containerd.service) or lower --global-maxconn"

// procDir is where the master's limits and capabilities are read
// (replaced in tests).
var procDir = "/proc"

// fdLimit is the open-file limit the master of HAProxy may raise itself
// to when it re-executes for a reload: its hard RLIMIT_NOFILE, or, with
// CAP_SYS_RESOURCE, the kernel's fs.nr_open. An error when it cannot be
// read (HAProxy in a container whose processes the controller does not
// see).
func fdLimit(pid int) (int, error) {
	dir := procDir + "/" + strconv.Itoa(pid)
	if capSysResource(dir + "/status") {
		b, err := os.ReadFile(procDir + "/sys/fs/nr_open")
		if err != nil {
			return 0, err
		}
		return strconv.Atoi(strings.TrimSpace(string(b)))
	}
	f, err := os.Open(dir + "/limits")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Max open files            1024                 524288               files
		rest, ok := strings.CutPrefix(sc.Text(), "Max open files")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) < 2 {
			break
		}
		if fields[1] == "unlimited" {
			return 1 << 30, nil
		}
		return strconv.Atoi(fields[1])
	}
	return 0, fmt.Errorf("%s/limits: no open-file limit", dir)
}

// capSysResource reports whether the process whose status file this is
// has CAP_SYS_RESOURCE in its effective set (it may raise its hard limit).
func capSysResource(status string) bool {
	b, err := os.ReadFile(status)
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<24) != 0 // CAP_SYS_RESOURCE
		}
	}
	return false
}

// checkFDs compares what the config rendered from cfg, layout and ro
// needs in open files with what HAProxy may have, records both in res,
// and returns an error wrapping ErrFDLimit, with a Refusal per Service
// the reload would change, when it does not fit: the reload would fail.
// A limit that cannot be read refuses nothing (the reload then tells).
func (d *HAProxy) checkFDs(ctx context.Context, cfg model.Config, layout model.Layout, ro render.Options, res *driver.Result) error {
	threads := runtime.NumCPU()
	if info, err := d.rt.ShowInfo(ctx); err == nil {
		if n, err := strconv.Atoi(info["Nbthread"]); err == nil && n > 0 {
			threads = n
		}
	}
	fds := render.FileDescriptors(cfg, layout, ro, threads)
	res.FDs.Need = fds.Need()
	p, err := d.master.ShowProc(ctx)
	if err != nil {
		d.log.Debug("open-file limit of HAProxy unknown", "need", fds.String(), "err", err)
		return nil
	}
	limit, err := fdLimit(p.MasterPID)
	if err != nil {
		d.log.Debug("open-file limit of HAProxy unknown", "need", fds.String(), "master", p.MasterPID, "err", err)
		return nil
	}
	res.FDs.Limit = limit
	if fds.Need() <= limit {
		if fds.Auto {
			res.FDs.MaxConn = fds.MaxConnFor(limit)
		}
		return nil
	}
	err = fmt.Errorf("%w: it needs %s, HAProxy may have %d (master pid %d); the configuration in effect stays: %s",
		ErrFDLimit, fds, limit, p.MasterPID, fdsWayOut)
	for _, svc := range changedServices(d.running, cfg) {
		res.Refused = append(res.Refused, driver.Refusal{Service: svc, Reason: ReasonFDLimit, Err: err})
	}
	return err
}

// changedServices lists the Services whose frontends or backends differ
// in structure between running and cfg (new ones included): those whose
// change waits for the reload.
func changedServices(running, cfg model.Config) []string {
	fes := make(map[string]model.Frontend, len(running.Frontends))
	for _, f := range running.Frontends {
		fes[f.Name] = f
	}
	bes := make(map[string]*model.Backend, len(running.Backends))
	for _, b := range running.Backends {
		bes[b.Name] = b
	}
	seen := map[string]bool{}
	var out []string
	add := func(svc string) {
		if svc != "" && !seen[svc] {
			seen[svc] = true
			out = append(out, svc)
		}
	}
	for _, f := range cfg.Frontends {
		if old, ok := fes[f.Name]; !ok || !old.Equal(f) {
			add(f.Service)
		}
	}
	for _, b := range cfg.Backends {
		if old, ok := bes[b.Name]; !ok || !old.SameStructure(b) {
			add(b.Service)
		}
	}
	return out
}

// fdsNote adds to a failed reload's error what is known of its need of
// open files, one of the reasons HAProxy refuses a config that `haproxy
// -c` passes.
func fdsNote(f driver.FDs) string {
	switch {
	case f.Need == 0:
		return ""
	case f.Limit == 0:
		return fmt.Sprintf(" (the configuration needs %d open files; HAProxy's limit could not be read)", f.Need)
	}
	return fmt.Sprintf(" (the configuration needs %d open files, HAProxy may have %d)", f.Need, f.Limit)
}

// firstReasons is the first few of a reload's reasons, for an error
// repeated on every retry (a first sync has one per Service).
func firstReasons(reasons []string) string {
	const few = 3
	if len(reasons) <= few {
		return strings.Join(reasons, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(reasons[:few], "; "), len(reasons)-few)
}
