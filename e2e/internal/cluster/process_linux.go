package cluster

import "syscall"

// dieWithParent makes the kernel send SIGKILL to the child when the thread
// that started it exits; startProcess keeps that thread alive as long as the
// child, so this fires exactly when the harness's process dies by any route:
// a panic, a test timeout, os.Exit or a signal, none of which run deferred
// cleanup.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
