//go:build unix && !linux

package benchkit

import (
	"fmt"
	"syscall"
	"time"
)

// CPUTime returns the user and system CPU time the process has used, from
// getrusage: every goroutine's, the garbage collector's included. (On
// Linux it is read from the process's CPU clock, which does not count in
// ticks: see cputime_linux.go.)
func CPUTime() (time.Duration, error) {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano()), nil
}
