package benchkit

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// ProcessMemory is a process's resident memory as the kernel counts it:
// what a container's memory limit sees of the process (besides the page
// cache its files use).
type ProcessMemory struct {
	// RSS is the resident set now (VmRSS), PeakRSS its largest since the
	// process started or since ResetPeakRSS (VmHWM), in bytes.
	RSS, PeakRSS uint64
}

// ReadProcessMemory returns the resident memory of process pid (0: this
// process) from /proc/<pid>/status.
func ReadProcessMemory(pid int) (ProcessMemory, error) {
	data, err := os.ReadFile(procPath(pid, "status"))
	if err != nil {
		return ProcessMemory{}, err
	}
	var m ProcessMemory
	for line := range bytes.Lines(data) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *uint64
		switch string(name) {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.PeakRSS
		default:
			continue
		}
		kb, err := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(value), []byte(" kB"))), 10, 64)
		if err != nil {
			return ProcessMemory{}, fmt.Errorf("parsing %s of /proc/%d/status: %w", name, pid, err)
		}
		*dst = kb << 10
	}
	return m, nil
}

// ResetPeakRSS sets this process's peak resident set (VmHWM) to its
// resident set now (clear_refs 5), so that a later ReadProcessMemory's
// PeakRSS is the peak of what follows.
func ResetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// ProcessCPUTime returns the user and system CPU time process pid (0: this
// process) has used, from /proc/<pid>/stat.
func ProcessCPUTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// the last ')'.
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return 0, fmt.Errorf("parsing /proc/%d/stat: no command name", pid)
	}
	fields := bytes.Fields(data[end+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("parsing /proc/%d/stat: %d fields", pid, len(fields))
	}
	var ticks uint64
	for _, f := range fields[11:13] { // utime and stime, fields 14 and 15 of stat
		v, err := strconv.ParseUint(string(f), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing /proc/%d/stat: %w", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's times:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// procPath returns /proc/<pid>/name, /proc/self/name for pid 0.
func procPath(pid int, name string) string {
	if pid == 0 {
		return "/proc/self/" + name
	}
	return "/proc/" + strconv.Itoa(pid) + "/" + name
}
