// Package netnsrun runs a function inside a network namespace.
package netnsrun

import (
	"runtime"

	"github.com/vishvananda/netns"
)

// Do runs fn on an OS thread that is in the namespace h: sockets and
// /proc/sys files opened there stay in it. fn runs on a goroutine of its
// own, locked to its thread: should the thread fail to return to its
// namespace, it ends with that goroutine instead of serving others.
func Do(h netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return // the thread ends with the goroutine
		}
		defer orig.Close()
		if err := netns.Set(h); err != nil {
			errc <- err
			return
		}
		err = fn()
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}
