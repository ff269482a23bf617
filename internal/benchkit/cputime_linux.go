package benchkit

import (
	"fmt"
	"syscall"
	"time"
	"unsafe"
)

// Linux's CPU clocks: CLOCK_PROCESS_CPUTIME_ID and CLOCK_THREAD_CPUTIME_ID.
const (
	clockProcessCPUTime = 2
	clockThreadCPUTime  = 3
)

// CPUTime returns the user and system CPU time the process has used: every
// goroutine's, the garbage collector's included. It reads the process's
// CPU clock, which the kernel keeps to the nanosecond, where getrusage
// counts in scheduler ticks (4 ms here, 5% of a W1 run of ours).
func CPUTime() (time.Duration, error) {
	return cpuClock(clockProcessCPUTime, "CLOCK_PROCESS_CPUTIME_ID")
}

// ThreadCPUTime returns the CPU time the calling OS thread has used. The
// caller keeps its goroutine on one thread (runtime.LockOSThread) between
// two readings. Unlike wall time, the difference leaves out the time other
// processes held the CPU, so that a figure taken on a loaded machine stays
// close to a quiet one's; it includes the garbage collection work the
// goroutine was charged (assists).
func ThreadCPUTime() (time.Duration, error) {
	return cpuClock(clockThreadCPUTime, "CLOCK_THREAD_CPUTIME_ID")
}

// cpuClock reads the CPU clock id, named name.
func cpuClock(id uintptr, name string) (time.Duration, error) {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, id, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, fmt.Errorf("clock_gettime(%s): %w", name, errno)
	}
	return time.Duration(ts.Nano()), nil
}
