package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/nodes"
)

// chaosFault is one fault: inject makes it happen (and waits until its
// effect shows where it must), undo takes it back. Both may add checks
// the truth must pass once the fault is undone (run.extra).
type chaosFault struct {
	name string
	// haproxyKept: HAProxy keeps running through the fault, so no new
	// connection to a healthy backend may fail and no established one
	// may be cut.
	haproxyKept bool
	// node: a node fault (connections through that node may fail until
	// HAProxy's checks see it).
	node   bool
	inject func(c *chaosEnv, run *faultRun)
	undo   func(c *chaosEnv, run *faultRun)
	// cleanup, when set, removes what the fault added once it is
	// measured (so that later faults run on the same cluster).
	cleanup func(c *chaosEnv)
}

type faultRun struct {
	// downAt: when HAProxy's checks saw the faulted node down (node
	// faults): failures before it went to the faulted node.
	downAt time.Time
	extra  []func() error
	notes  []string
	// undone, when set by undo, is when the fault was really over (etcd
	// back and the apiserver writing again), for convergence.
	undone time.Time
	// finish, when set, runs once the load has stopped (a timeline's
	// end), before the failures are counted.
	finish []func()
	// noEndpoints: the spells in which the Service's EndpointSlices held
	// no ready endpoint: the controller then gives a Cluster Service no
	// servers, deliberately, as kube-proxy refuses it once it has synced
	// (reliability.md), so failures then do not break the target.
	noEndpoints []spell
}

func (r *faultRun) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// chaosResult is one row of the table.
type chaosResult struct {
	fault                chaosFault
	total, failed        int
	failedBeforeDown     int
	failedNoEndpoints    int
	established, cut     int
	converge             time.Duration
	converged            bool
	reloads, lost, notes string
	firstFailures        []string
}

// TestChaos injects every fault of chaosFaults one at a time under a
// steady load of new connections and writes the table (make chaos:
// HKS_CHAOS=1, HKS_CHAOS_REPORT=docs/reliability.md). It takes minutes:
// skipped unless HKS_CHAOS is set.
func TestChaos(t *testing.T) {
	if os.Getenv("HKS_CHAOS") == "" {
		t.Skip("chaos suite: HKS_CHAOS=1 (make chaos)")
	}
	only := os.Getenv("HKS_CHAOS_ONLY") // a comma-separated list of fault names
	c := newChaosEnv(t)
	var results []chaosResult
	for _, f := range chaosFaults() {
		if only != "" && !strings.Contains(","+only+",", ","+f.name+",") {
			continue
		}
		res := c.runFault(f)
		t.Logf("%s", res.row())
		results = append(results, res)
		if !res.converged {
			t.Errorf("%s: the load balancer did not serve the cluster's truth again within %v", f.name, chaosConverge)
			break
		}
	}
	if path := os.Getenv("HKS_CHAOS_REPORT"); path != "" && len(results) > 0 {
		if err := writeReliability(path, results); err != nil {
			t.Error(err)
		}
	}
}

// runFault measures one fault.
func (c *chaosEnv) runFault(f chaosFault) chaosResult {
	c.t.Helper()
	c.eventuallyWithin(chaosConverge, f.name+": the truth before the fault", c.truth())
	var kept []*keepAlive
	for _, d := range c.deps() {
		kept = append(kept, c.keepAliveThrough(c.addr, d))
	}
	defer func() {
		for _, k := range kept {
			k.Close()
		}
	}()
	// The kept connections are used every second (HAProxy's idle
	// timeouts are a minute): one that stops answering was cut.
	cut := make([]bool, len(kept))
	keepStop, keepDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(keepDone)
		for range 1000 { // bounded: 1000 s at most
			for i, k := range kept {
				if got, err := k.ask(); !cut[i] && (err != nil || got != k.pod) {
					cut[i] = true
				}
			}
			select {
			case <-keepStop:
				return
			case <-time.After(time.Second): // the pace of use, not synchronisation
			}
		}
	}()
	before := c.proc()
	logAt := len(c.log())
	load := c.startLoad(c.addr)
	run := &faultRun{}
	f.inject(c, run)
	undone := time.Now()
	f.undo(c, run)
	if !run.undone.IsZero() {
		undone = run.undone
	}
	err := waitUntil(chaosConverge, c.truth(run.extra...))
	res := chaosResult{fault: f, converge: time.Since(undone), converged: err == nil}
	if err != nil {
		run.note("not converged: %v", err)
		c.t.Logf("%s: %v\n%s\n%s", f.name, err, c.statReport(), tailString(c.log(), 40))
	}
	total, failed := load.stop()
	for _, fin := range run.finish {
		fin()
	}
	res.total, res.failed = total, len(failed)
	for i, f := range failed {
		if i < 3 {
			res.firstFailures = append(res.firstFailures, f.String())
		}
		if !run.downAt.IsZero() && f.at.Before(run.downAt) {
			res.failedBeforeDown++
			continue
		}
		for _, s := range run.noEndpoints {
			if s.holds(f.at) {
				res.failedNoEndpoints++
				break
			}
		}
	}
	if len(failed) > 1 {
		first, last := failed[0].at, failed[len(failed)-1].at
		run.note("failures from %s to %s (%v)", first.Format("15:04:05.000"), last.Format("15:04:05.000"), last.Sub(first).Round(time.Millisecond))
	}
	close(keepStop)
	<-keepDone
	for i, k := range kept {
		res.established++
		// Once more after the fault: it may have fitted between two uses.
		if got, err := k.ask(); err != nil || got != k.pod {
			cut[i] = true
		}
		if cut[i] {
			res.cut++
		}
	}
	if !res.converged || res.converge > targetConverge {
		l := c.log()
		if logAt > len(l) { // a new controller process
			logAt = 0
		}
		c.t.Logf("%s: the controller's log from the fault on (tail):\n%s", f.name, tailString(l[logAt:], 40))
	}
	after := c.proc()
	switch {
	case after.MasterPID == 0:
		res.reloads = "? (no master)"
	case after.MasterPID != before.MasterPID:
		res.reloads = fmt.Sprintf("%d (new master)", after.Reloads)
	default:
		res.reloads = fmt.Sprint(after.Reloads - before.Reloads)
	}
	// What is persisted follows within a persist interval: poll briefly.
	_ = waitUntil(10*time.Second, func() error {
		if res.lost = c.lostOrWrong(); res.lost != "" {
			return fmt.Errorf("%s", res.lost)
		}
		return nil
	})
	res.notes = strings.Join(run.notes, "; ")
	if f.cleanup != nil {
		f.cleanup(c)
	}
	return res
}

// killPID sends SIGKILL.
func sigkill(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
}

// chaosFaults is the fault table, most valuable first.
func chaosFaults() []chaosFault {
	nothing := func(*chaosEnv, *faultRun) {}
	return append([]chaosFault{
		{name: "haproxy-worker-kill-9", inject: func(c *chaosEnv, run *faultRun) {
			p := c.proc()
			if len(p.Workers) == 0 {
				c.t.Fatalf("no worker: %+v", p)
			}
			sigkill(c.t, p.Workers[0])
			if c.supervise(5 * time.Second) {
				run.note("the master exited with its worker; the supervisor restarted HAProxy")
			} else {
				run.note("the master kept running")
			}
		}, undo: nothing},
		{name: "haproxy-master-kill-9", inject: func(c *chaosEnv, run *faultRun) {
			sigkill(c.t, c.hap.MasterPID())
			if c.supervise(10 * time.Second) {
				run.note("the supervisor restarted HAProxy")
			}
		}, undo: nothing},
		{name: "controller-kill-9-in-burst", haproxyKept: true, inject: func(c *chaosEnv, run *faultRun) {
			const n = 20
			for i := range n {
				if i == n/2 {
					c.killController()
				}
				c.createService(webService(fmt.Sprintf("burst-%d", i), "web", int32(8100+i), "Cluster"))
			}
			run.note("killed after %d of %d new Services", n/2, n)
			run.extra = append(run.extra, c.serves(8100), c.serves(8100+n-1),
				c.inFiles(8100+n/2))
		}, undo: func(c *chaosEnv, _ *faultRun) { c.startController() }},
		{name: "controller-restart-apiserver-unreachable", haproxyKept: true, inject: func(c *chaosEnv, run *faultRun) {
			c.killController()
			c.proxy.cut()
			c.startController()
			c.createService(webService("while-blind", "web", 8152, "Cluster"))
			// The fault's duration: a controller that cannot list must
			// not touch what HAProxy serves meanwhile.
			time.Sleep(10 * time.Second)
			if err := c.nodesUp(); err != nil {
				run.note("while the controller was blind: %v", err)
			}
			run.note("restarted while the apiserver was unreachable for 10 s, a Service created meanwhile")
			run.extra = append(run.extra, c.serves(8152))
		}, undo: func(c *chaosEnv, _ *faultRun) {
			if err := c.proxy.restore(); err != nil {
				c.t.Fatal(err)
			}
		}},
		{name: "apiserver-unreachable-30s", haproxyKept: true, inject: func(c *chaosEnv, run *faultRun) {
			c.createService(webService("pre-outage", "web", 8151, "Cluster"))
			c.eventuallyWithin(chaosConverge, "pre-outage served", c.serves(8151))
			c.proxy.cut()
			c.createService(webService("during-outage", "web", 8150, "Cluster"))
			if err := c.client.CoreV1().Services(ns).Delete(bg, "pre-outage", metaDelete); err != nil {
				c.t.Fatal(err)
			}
			// The fault's duration, not synchronisation: the load runs
			// meanwhile and must see no failure.
			time.Sleep(30 * time.Second)
			if err := c.nodesUp(); err != nil {
				run.note("during the outage: %v", err)
			}
			run.note("a Service created and one deleted during the outage")
			run.extra = append(run.extra, c.serves(8150), c.notInFiles(8151))
		}, undo: func(c *chaosEnv, _ *faultRun) {
			if err := c.proxy.restore(); err != nil {
				c.t.Fatal(err)
			}
		}},
		{name: "kube-proxy-stopped-n1", haproxyKept: true, node: true, inject: func(c *chaosEnv, run *faultRun) {
			n1 := c.tier.Node("n1")
			begin := time.Now()
			n1.StopKubeProxy()
			c.eventuallyWithin(chaosConverge, "n1 down", c.nodeDown(n1))
			run.downAt = time.Now()
			run.note("n1 down in HAProxy after %v", time.Since(begin).Round(10*time.Millisecond))
		}, undo: func(c *chaosEnv, _ *faultRun) {
			if err := c.tier.Node("n1").StartKubeProxy(); err != nil {
				c.t.Fatal(err)
			}
		}},
		{name: "kubelet-stopped-n1", haproxyKept: true, node: true, inject: func(c *chaosEnv, run *faultRun) {
			n1 := c.tier.Node("n1")
			begin := time.Now()
			n1.StopKubelet()
			c.eventuallyWithin(chaosConverge, "n1 not Ready", c.nodeNotReady("n1"))
			run.note("n1 NotReady after %v", time.Since(begin).Round(10*time.Millisecond))
			c.eventuallyWithin(chaosConverge, "n1 down", c.nodeDown(n1))
			run.downAt = time.Now()
			run.note("n1 out of HAProxy after %v", time.Since(begin).Round(10*time.Millisecond))
		}, undo: func(c *chaosEnv, run *faultRun) {
			if err := c.tier.Node("n1").StartKubelet(); err != nil {
				c.t.Fatal(err)
			}
		}},
		{name: "partition-lb-n1", haproxyKept: true, node: true, inject: func(c *chaosEnv, run *faultRun) {
			n1 := c.tier.Node("n1")
			begin := time.Now()
			// Dropped silently, as a real partition does (no refusal
			// HAProxy could see at once), in the test's own namespace.
			nftIn(c.t, c.tier.LB, fmt.Sprintf("table inet hks_chaos {\n chain out {\n type filter hook output priority 0;\n ip daddr { %s, %s } drop\n }\n}\n", n1.Addr, n1.PodCIDR))
			c.eventuallyWithin(chaosConverge, "n1 down", c.nodeDown(n1))
			run.downAt = time.Now()
			run.note("n1 down in HAProxy after %v", time.Since(begin).Round(10*time.Millisecond))
		}, undo: func(c *chaosEnv, _ *faultRun) {
			nftIn(c.t, c.tier.LB, "delete table inet hks_chaos\n")
		}},
		{name: "containerd-killed-n1", haproxyKept: true, node: true, inject: func(c *chaosEnv, run *faultRun) {
			c.tier.Node("n1").KillContainerd()
			// The Pods keep running under their shims; kubelet's PLEG
			// and the readiness probes go on failing to reach the
			// runtime until it is back. Give it the node grace period.
			if err := waitUntil(chaosNodeGrace+2*time.Second, c.nodeNotReady("n1")); err == nil {
				run.note("n1 went NotReady")
			} else {
				run.note("n1 stayed Ready")
			}
		}, undo: func(c *chaosEnv, _ *faultRun) {
			if err := c.tier.Node("n1").StartContainerd(); err != nil {
				c.t.Fatal(err)
			}
		}},
		{name: "new-frontend-port-taken", haproxyKept: true, inject: func(c *chaosEnv, run *faultRun) {
			// The port taken on the Services' address: in tproxy mode the
			// kernel hands its connections to the fixed listener before
			// any socket sees them, so the Service is served with no
			// reload and the holder never answers.
			var l net.Listener
			if err := nodes.InNS(c.tier.LB, func() (err error) { l, err = net.Listen("tcp", c.serviceAddr(8160)); return err }); err != nil {
				c.t.Fatal(err)
			}
			run.extra = append(run.extra, c.serves(8160))
			c.taken = l
			before := c.proc()
			c.createService(webService("taken", "web", 8160, "Cluster"))
			if c.listen.tproxy {
				c.eventuallyWithin(chaosConverge, "taken served through the fixed listener", c.serves(8160))
				run.note("served through the fixed listener beside the port's holder (%d reloads)", c.proc().Reloads-before.Reloads)
				return
			}
			err := waitUntil(chaosConverge, func() error {
				if p := c.proc(); p.Failed > 0 || p.Reloads > before.Reloads {
					return nil
				}
				return c.controllerSaid("port taken")()
			})
			switch p := c.proc(); {
			case err != nil:
				run.note("neither a reload nor a word from the controller: %v", err)
			case p.Failed > 0:
				run.note("HAProxy's reload failed, the old worker kept serving")
			case p.Reloads > before.Reloads:
				run.note("HAProxy reloaded")
			default:
				run.note("the controller saw the port taken and did not reload")
			}
		}, undo: func(c *chaosEnv, _ *faultRun) { c.taken.Close() }},
		{name: "state-dir-full", haproxyKept: true, inject: func(c *chaosEnv, run *faultRun) {
			filler := filepath.Join(c.dir, "filler")
			fill(c.t, filler)
			c.createService(webService("disk-full", "web", 8170, "Cluster"))
			c.diskFault(run, "no space left on device")
			run.extra = append(run.extra, c.serves(8170))
		}, undo: func(c *chaosEnv, _ *faultRun) {
			if err := os.Remove(filepath.Join(c.dir, "filler")); err != nil {
				c.t.Fatal(err)
			}
		}},
		{name: "state-dir-read-only", haproxyKept: true, inject: func(c *chaosEnv, run *faultRun) {
			if out, err := execOut("mount", "-o", "remount,ro", c.dir); err != nil {
				c.t.Fatalf("remount ro: %v: %s", err, out)
			}
			c.createService(webService("disk-ro", "web", 8171, "Cluster"))
			c.diskFault(run, "read-only file system")
			run.extra = append(run.extra, c.serves(8171))
		}, undo: func(c *chaosEnv, _ *faultRun) {
			if out, err := execOut("mount", "-o", "remount,rw", c.dir); err != nil {
				c.t.Fatalf("remount rw: %v: %s", err, out)
			}
		}},
	}, controllerFaults()...)
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for range 1 << 14 { // bounded: 1 GiB at most
		if _, err := f.Write(buf); err != nil {
			return
		}
	}
	t.Fatalf("%s: the file system did not fill", path)
}

// diskFault waits until the controller says it cannot write (msg), and
// notes what it saw meanwhile.
func (c *chaosEnv) diskFault(run *faultRun, msg string) {
	if err := waitUntil(20*time.Second, c.controllerSaid(msg)); err != nil {
		run.note("the controller did not say %q within 20 s", msg)
	} else {
		run.note("the controller said %q", msg)
	}
	if lost := c.lostOrWrong(); lost != "" {
		run.note("during the fault: %s", lost)
	}
}

// nftIn applies an nftables script in the network namespace netns (one
// of the test's own).
func nftIn(t *testing.T, netns, script string) {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", netns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft in %s: %v: %s\n%s", netns, err, out, script)
	}
}

// serves reports nil once the Services' port answers (c.serviceAddr).
func (c *chaosEnv) serves(port int32) func() error {
	return func() error {
		_, err := c.hostname(c.serviceAddr(port))
		return err
	}
}

// inFiles reports nil once HAProxy's files serve port: a bind on it in
// haproxy.cfg, or in tproxy mode the listener map's key.
func (c *chaosEnv) inFiles(port int32) func() error {
	return func() error {
		if c.listen.tproxy {
			return c.listenerMapsTo(tproxyVIP, port, "")
		}
		b, err := os.ReadFile(c.cfgPath)
		if err != nil {
			return err
		}
		return contains(string(b), fmt.Sprintf(":%d", port))
	}
}

func (c *chaosEnv) notInFiles(port int32) func() error {
	return func() error {
		if c.inFiles(port)() == nil {
			return fmt.Errorf("port %d still in HAProxy's files", port)
		}
		return nil
	}
}

func (c *chaosEnv) nodeNotReady(name string) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		n, err := c.client.CoreV1().Nodes().Get(ctx, name, metaGet)
		if err != nil {
			return err
		}
		if nodes.IsReady(n) {
			return fmt.Errorf("node %s still Ready", name)
		}
		return nil
	}
}

// TestChaosFast is the subset of the chaos suite that `make test` runs:
// the controller killed in a burst of changes and restarted, and a new
// frontend on a port another process holds. HAProxy keeps running
// through both: no new connection may fail, no established one be cut,
// nothing be lost, and the truth must come back (within the suite's
// deadline: timings are the table's, not a test's).
func TestChaosFast(t *testing.T) {
	c := newChaosEnv(t)
	for _, f := range chaosFaults() {
		if f.name != "controller-kill-9-in-burst" && f.name != "new-frontend-port-taken" {
			continue
		}
		res := c.runFault(f)
		t.Logf("%s", res.row())
		if !res.converged {
			t.Fatalf("%s: not converged: %s", f.name, res.notes)
		}
		if res.failed > 0 || res.cut > 0 || res.lost != "" {
			t.Errorf("%s: %d of %d new connections failed (first: %v), %d of %d established cut, lost or wrong: %q",
				f.name, res.failed, res.total, res.firstFailures, res.cut, res.established, res.lost)
		}
	}
}
