package replayserver

import "syscall"

// childProcAttr makes the server process die with its parent.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
