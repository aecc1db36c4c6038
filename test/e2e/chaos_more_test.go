package e2e

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// The controller killed at chosen moments of its work, and the control
// plane's store down: the faults of issue 23 added after the first table.

// burst500 is the size of the large burst (ports burst500Port...).
const (
	burst500     = 500
	burst500Port = 9000
)

func controllerFaults() []chaosFault {
	return []chaosFault{
		{name: "controller-kill-9-in-reload", haproxyKept: true, inject: func(c *chaosEnv, run *faultRun) {
			before := c.proc()
			c.createService(webService("in-reload", "web", 8180, "Cluster"))
			// The moment HAProxy's master counts the reload the controller
			// asked for: the controller is waiting for the new worker, to
			// correct its slots and persist.
			if err := pollFast(chaosConverge, func() error {
				if p := c.proc(); p.Reloads > before.Reloads || p.MasterPID != before.MasterPID {
					return nil
				}
				return errors.New("no reload yet")
			}); err != nil {
				c.t.Fatalf("the controller did not reload for a new Service: %v", err)
			}
			c.killController()
			run.note("killed as HAProxy's master counted the reload")
			run.extra = append(run.extra, c.serves(8180))
		}, undo: func(c *chaosEnv, _ *faultRun) { c.startController() }},
		{name: "controller-kill-9-in-persist", haproxyKept: true, inject: func(c *chaosEnv, run *faultRun) {
			// A server change (n2 excluded: its server drained through the
			// Runtime API, no reload) is persisted to the state directory
			// (the config and the server state file, each written to a
			// temporary file and renamed): kill as the first file appears.
			created, stop := c.watchCreate()
			defer stop()
			if err := lab.SetNodeExcluded(bg, c.client, "n2", true); err != nil {
				c.t.Fatal(err)
			}
			select {
			case name := <-created:
				c.killController()
				run.note("killed as %s was created", name)
			case <-time.After(20 * time.Second):
				c.killController()
				run.note("no file written within 20 s; killed then")
			}
			if lost := c.lostOrWrong(); lost != "" {
				run.note("right after the kill: %s", lost)
			}
		}, undo: func(c *chaosEnv, _ *faultRun) {
			if err := lab.SetNodeExcluded(bg, c.client, "n2", false); err != nil {
				c.t.Fatal(err)
			}
			c.startController()
		}},
		{name: "controller-kill-9-in-burst-500", haproxyKept: true, inject: func(c *chaosEnv, run *faultRun) {
			begin := time.Now()
			for i := range burst500 {
				if i == burst500/2 {
					c.killController()
				}
				c.createService(webService(fmt.Sprintf("b500-%d", i), "web", int32(burst500Port+i), "Cluster"))
			}
			run.note("killed after %d of %d new Services (created in %v)", burst500/2, burst500, time.Since(begin).Round(100*time.Millisecond))
			run.extra = append(run.extra, c.serves(burst500Port),
				c.serves(burst500Port+burst500-1),
				c.inFiles(burst500Port+burst500/2))
		}, undo: func(c *chaosEnv, _ *faultRun) { c.startController() },
			cleanup: func(c *chaosEnv) {
				for i := range burst500 {
					_ = c.client.CoreV1().Services(ns).Delete(bg, fmt.Sprintf("b500-%d", i), metav1.DeleteOptions{})
				}
				c.eventuallyWithin(chaosConverge, "the 500 Services gone", c.notInFiles(burst500Port))
			}},
		{name: "etcd-down-20s", haproxyKept: true, inject: func(c *chaosEnv, run *faultRun) {
			finish := c.watchTimeline()
			logAt := len(c.log())
			run.finish = append(run.finish, func() {
				events, empty := finish()
				run.noEndpoints = empty
				c.t.Logf("etcd-down-20s: what the control plane wrote and HAProxy ran:\n%s", strings.Join(events, "\n"))
				for _, e := range events {
					if strings.Contains(e, "Ready=Unknown") || strings.Contains(e, "Ready=False") {
						run.note("the node-lifecycle controller marked nodes or Pods NotReady (see the log's timeline)")
						break
					}
				}
				// The controller's own word on the nodes it kept (fail open).
				l := c.log()
				if logAt > len(l) { // a new controller process
					logAt = 0
				}
				for _, line := range strings.Split(l[logAt:], "\n") {
					if strings.Contains(line, "every node NotReady") || strings.Contains(line, "fail open over") {
						c.t.Logf("etcd-down-20s: the controller: %s", line)
						_, msg, _ := strings.Cut(line, "msg=")
						run.note("the controller: %s", msg)
					}
				}
				for _, s := range empty {
					run.note("web's EndpointSlices held no ready endpoint from %s to %s (%v, until HAProxy ran a server of web again)",
						s.from.Format("15:04:05.000"), s.to.Format("15:04:05.000"), s.to.Sub(s.from).Round(time.Millisecond))
				}
			})
			c.kube.StopEtcd()
			// The fault's duration, not synchronisation.
			time.Sleep(20 * time.Second)
			if err := c.nodesUp(); err != nil {
				run.note("while etcd was down: %v", err)
			}
		}, undo: func(c *chaosEnv, run *faultRun) {
			begin := time.Now()
			if err := c.kube.StartEtcd(); err != nil {
				c.t.Fatal(err)
			}
			// A change once etcd is back (the apiserver could write none
			// while it was down).
			if err := pollFast(30*time.Second, func() error {
				_, err := c.client.CoreV1().Services(ns).Create(bg, webService("after-etcd", "web", 8181, "Cluster"), metav1.CreateOptions{})
				return err
			}); err != nil {
				c.t.Fatalf("no Service could be created once etcd was back: %v", err)
			}
			run.undone = time.Now()
			run.note("a Service created once etcd was back (the apiserver wrote again %v after etcd was started)", time.Since(begin).Round(10*time.Millisecond))
			run.extra = append(run.extra, c.serves(8181))
		}},
	}
}

// pollFast is waitUntil at 10 ms: a moment to catch, not a state to wait
// for.
func pollFast(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	var err error
	for range int(timeout / (10 * time.Millisecond)) { // bounded
		if err = cond(); err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	return err
}

// watchCreate reports the name of each file created in the state
// directory (inotify) until stop is called.
func (c *chaosEnv) watchCreate() (<-chan string, func()) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		c.t.Fatalf("inotify: %v", err)
	}
	if _, err := unix.InotifyAddWatch(fd, c.dir, unix.IN_CREATE); err != nil {
		unix.Close(fd)
		c.t.Fatalf("inotify %s: %v", c.dir, err)
	}
	out := make(chan string, 16)
	var stopped atomic.Bool
	go func() {
		defer unix.Close(fd)
		buf := make([]byte, 4096)
		for range 1000 { // bounded: 100 s at most
			if stopped.Load() {
				return
			}
			if n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 100); n <= 0 {
				continue
			}
			n, err := unix.Read(fd, buf)
			if err != nil || n <= 0 {
				continue
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				end := off + unix.SizeofInotifyEvent + int(ev.Len)
				name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:end]), "\x00")
				off = end
				select {
				case out <- name:
				default:
				}
			}
		}
	}()
	return out, func() { stopped.Store(true) }
}
