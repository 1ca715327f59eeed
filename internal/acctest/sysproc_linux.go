package acctest

import "syscall"

// sysProcAttr makes the kernel send SIGTERM to the sandbox if the test binary dies (panic,
// timeout, kill -9), so no control plane outlives its tests.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
