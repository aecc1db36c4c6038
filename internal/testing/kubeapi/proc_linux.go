package kubeapi

import "syscall"

// sysProcAttr makes the kernel kill a child if the process that started it
// dies (a test binary killed by its timeout, say), so no etcd or apiserver
// outlives it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
