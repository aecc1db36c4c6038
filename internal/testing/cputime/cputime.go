// Package cputime tells benchmarks the CPU time their process used, so
// a benchmark on a shared machine reports its own cost beside the wall
// time, which waits for a core.
package cputime

import (
	"syscall"
	"time"
)

// Used is the CPU time this process has used so far (user and system);
// 0 when the kernel does not say.
func Used() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
