package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc's CPU times (100
// on every Linux this project runs on).
const clockTicks = 100

// procCPU is the CPU time pid used so far (utime + stime of its
// /proc stat: every thread's, the collector's workers included), 0 when
// it cannot be read.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:])) // f[0] is the state, field 3
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64) // utime, field 14
	s, _ := strconv.ParseInt(f[12], 10, 64) // stime, field 15
	return time.Duration(u+s) * time.Second / clockTicks
}
