//go:build !linux

package benchkit

import (
	"errors"
	"time"
)

// ProcessMemory is a process's resident memory (Linux only).
type ProcessMemory struct {
	RSS, PeakRSS uint64
}

// errNoProc is errors.ErrUnsupported.
var errNoProc = errors.ErrUnsupported

// ReadProcessMemory needs Linux.
func ReadProcessMemory(int) (ProcessMemory, error) { return ProcessMemory{}, errNoProc }

// ResetPeakRSS needs Linux.
func ResetPeakRSS() error { return errNoProc }

// ProcessCPUTime needs Linux.
func ProcessCPUTime(int) (time.Duration, error) { return 0, errNoProc }
