//go:build unix

package benchkit

import (
	"fmt"
	"syscall"
	"time"
)

// CPUTime returns the user and system CPU time the process has used, from
// getrusage: every goroutine's, the garbage collector's included.
func CPUTime() (time.Duration, error) {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano()), nil
}
