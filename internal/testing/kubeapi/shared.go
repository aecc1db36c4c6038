package kubeapi

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Starting kube-apiserver and etcd is most of what an e2e test costs
// (docs/testing.md, "where the CPU goes"). In a test binary whose TestMain
// runs through Shared, Start hands the tests of the process one server,
// one test at a time, and brings its cluster back to the state it had
// when it was ready (Reset) after each: a test sees what a fresh server
// would show it. A test gets a server of its own instead when it asks for
// Options, when another test holds the shared one (two servers in one
// test), and the shared one is thrown away (the next test starts another)
// when its test failed, stopped or restarted a part of it (StopAPIServer,
// StopEtcd), or could not be reset.

// resetTimeout bounds a Reset between two tests.
const resetTimeout = 2 * time.Minute

var shared struct {
	mu   sync.Mutex
	on   bool
	busy bool    // a test holds s
	s    *Server // nil until the first test, or after one threw it away
	stop func()
	n    int // tests that held s
}

// Runner is what TestMain runs: *testing.M.
type Runner interface{ Run() int }

// Shared turns sharing on for the tests m runs and returns a Runner that
// runs them, then stops the shared server.
func Shared(m Runner) Runner {
	shared.mu.Lock()
	shared.on = true
	shared.mu.Unlock()
	return sharedRun{m}
}

type sharedRun struct{ m Runner }

func (r sharedRun) Run() int {
	code := r.m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	discard()
	return code
}

// discard stops the shared server and removes its files (shared.mu held).
func discard() {
	if shared.s == nil {
		return
	}
	shared.stop()
	os.RemoveAll(shared.s.Dir)
	shared.s, shared.stop, shared.n = nil, nil, 0
}

// lease hands t the shared server when sharing is on, opts are the zero
// Options and no other test holds it; nil otherwise.
func lease(t testing.TB, opts Options) *Server {
	t.Helper()
	if !reflect.DeepEqual(opts, Options{}) {
		return nil
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.on || shared.busy {
		return nil
	}
	begin := time.Now()
	if shared.s == nil {
		s, stop, err := startShared()
		if err != nil {
			t.Fatalf("kubeapi: %v", err)
		}
		shared.s, shared.stop = s, stop
	}
	s := shared.s
	shared.busy, s.tainted = true, false
	shared.n++
	t.Logf("kubeapi: apiserver %s shared, test %d on it, ready in %v (dir %s)", s.URL, shared.n, time.Since(begin).Round(time.Millisecond), s.Dir)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(s.LogTail(60))
		}
		release(t, s)
	})
	return s
}

// release gives the shared server back after t: reset for the next test,
// or thrown away.
func release(t testing.TB, s *Server) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.busy = false
	why := ""
	switch {
	case t.Failed():
		why = "its test failed"
	case s.tainted:
		why = "its test stopped a part of it"
	default:
		ctx, cancel := context.WithTimeout(context.Background(), resetTimeout)
		defer cancel()
		begin := time.Now()
		deleted, restored, err := s.Reset(ctx)
		if err == nil {
			t.Logf("kubeapi: reset for the next test: %d keys deleted, %d put back, in %v", deleted, restored, time.Since(begin).Round(time.Millisecond))
			return
		}
		why = fmt.Sprintf("reset: %v", err)
		t.Errorf("kubeapi: the shared apiserver could not be reset: %v", err)
	}
	t.Logf("kubeapi: the shared apiserver stopped (%s): the next test starts another", why)
	discard()
}

// startShared starts the shared server, in a directory of its own that
// outlives each test, from a goroutine locked to its thread for the life
// of the process: the processes die with the thread that started them
// (proc's Pdeathsig), and a test's goroutine may end its thread.
func startShared() (*Server, func(), error) {
	type started struct {
		s    *Server
		stop func()
		err  error
	}
	ch := make(chan started)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives as long as the process
		var r started
		dir, err := os.MkdirTemp("", "kubeapi-shared-")
		if err != nil {
			r.err = err
		} else if r.s, r.stop, r.err = StartProcess(dir); r.err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), resetTimeout)
			if r.err = r.s.Baseline(ctx); r.err != nil {
				r.stop()
			}
			cancel()
		}
		if r.err != nil && dir != "" {
			os.RemoveAll(dir)
		}
		ch <- r
		select {} // keep the thread
	}()
	r := <-ch
	return r.s, r.stop, r.err
}
