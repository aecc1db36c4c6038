package e2e

import "time"

// clockTicks is the kernel's USER_HZ, the unit of /proc's CPU times (100
// on every Linux this project runs on).
const clockTicks = 100

// procCPU is the CPU time pid used so far (utime + stime of its
// /proc stat: every thread's, the collector's workers included, procTicks),
// 0 when it cannot be read.
func procCPU(pid int) time.Duration {
	return time.Duration(procTicks(pid)) * time.Second / clockTicks
}
