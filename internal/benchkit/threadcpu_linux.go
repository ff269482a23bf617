package benchkit

import (
	"fmt"
	"syscall"
	"time"
	"unsafe"
)

// clockThreadCPUTime is Linux's CLOCK_THREAD_CPUTIME_ID.
const clockThreadCPUTime = 3

// ThreadCPUTime returns the CPU time the calling OS thread has used. The
// caller keeps its goroutine on one thread (runtime.LockOSThread) between
// two readings. Unlike wall time, the difference leaves out the time other
// processes held the CPU, so that a figure taken on a loaded machine stays
// close to a quiet one's; it includes the garbage collection work the
// goroutine was charged (assists).
func ThreadCPUTime() (time.Duration, error) {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, fmt.Errorf("clock_gettime(CLOCK_THREAD_CPUTIME_ID): %w", errno)
	}
	return time.Duration(ts.Nano()), nil
}
