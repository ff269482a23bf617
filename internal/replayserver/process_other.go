//go:build !linux

package replayserver

import "syscall"

// childProcAttr is nil: the server process ends when its stdin closes.
func childProcAttr() *syscall.SysProcAttr { return nil }
