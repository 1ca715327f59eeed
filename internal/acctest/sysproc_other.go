//go:build !linux

package acctest

import "syscall"

// sysProcAttr: Pdeathsig is Linux-only; elsewhere the sandbox is stopped by Main only.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
