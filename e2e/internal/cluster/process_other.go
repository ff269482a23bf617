//go:build !linux

package cluster

import "syscall"

// dieWithParent returns no attributes: only Linux can tie a child's life to
// its parent's. Elsewhere a test binary that dies without running its
// cleanup leaves the servers running.
func dieWithParent() *syscall.SysProcAttr { return nil }
