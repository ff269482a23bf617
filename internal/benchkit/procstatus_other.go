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

// MemoryCgroup is a memory cgroup with a limit (Linux only).
type MemoryCgroup struct{}

// NewMemoryCgroup needs Linux.
func NewMemoryCgroup(string, uint64) (*MemoryCgroup, error) { return nil, errNoProc }

// JoinMemoryCgroup needs Linux.
func JoinMemoryCgroup(string) error { return errNoProc }

// Dir returns "".
func (*MemoryCgroup) Dir() string { return "" }

// Peak needs Linux.
func (*MemoryCgroup) Peak() (uint64, error) { return 0, errNoProc }

// OOMKills needs Linux.
func (*MemoryCgroup) OOMKills() (uint64, error) { return 0, errNoProc }

// Remove needs Linux.
func (*MemoryCgroup) Remove() error { return errNoProc }
