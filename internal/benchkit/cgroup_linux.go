package benchkit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MemoryCgroup is a memory cgroup with a limit, created below this
// process's own, for running a process under a container's memory limit
// (E7's bisection). It works with cgroup v2 (memory.max, memory.peak,
// memory.events) and with v1's memory controller (memory.limit_in_bytes,
// memory.max_usage_in_bytes, memory.oom_control), whichever the machine
// mounts; creating one needs the right to write there (root).
type MemoryCgroup struct {
	dir string
	v2  bool
}

// cgroupRoot is where cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// NewMemoryCgroup creates cgroup name below this process's memory cgroup,
// limited to limit bytes of memory (and no swap).
func NewMemoryCgroup(name string, limit uint64) (*MemoryCgroup, error) {
	own, v2, err := ownMemoryCgroup()
	if err != nil {
		return nil, err
	}
	c := &MemoryCgroup{dir: filepath.Join(own, name), v2: v2}
	if err := os.Mkdir(c.dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("creating cgroup %s: %w", c.dir, err)
	}
	limitText := strconv.FormatUint(limit, 10)
	files := [][2]string{{"memory.limit_in_bytes", limitText}, {"memory.memsw.limit_in_bytes", limitText}}
	if v2 {
		files = [][2]string{{"memory.max", limitText}, {"memory.swap.max", "0"}}
	}
	for i, f := range files {
		err := os.WriteFile(filepath.Join(c.dir, f[0]), []byte(f[1]), 0)
		if err != nil && !(i == 1 && errors.Is(err, os.ErrNotExist)) { // swap accounting may be off
			c.Remove()
			return nil, fmt.Errorf("setting %s of cgroup %s: %w", f[0], c.dir, err)
		}
	}
	return c, nil
}

// ownMemoryCgroup returns the directory of this process's memory cgroup
// and whether it is cgroup v2.
func ownMemoryCgroup() (string, bool, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false, err
	}
	v2Path := ""
	for line := range strings.Lines(string(data)) {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for controller := range strings.SplitSeq(parts[1], ",") {
			if controller == "memory" {
				return filepath.Join(cgroupRoot, "memory", parts[2]), false, nil
			}
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path = parts[2]
		}
	}
	controllers, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers"))
	if err == nil && v2Path != "" && bytes.Contains(controllers, []byte("memory")) {
		return filepath.Join(cgroupRoot, v2Path), true, nil
	}
	return "", false, errors.New("no memory cgroup controller mounted (neither cgroup v1's memory nor v2's)")
}

// Dir returns the cgroup's directory.
func (c *MemoryCgroup) Dir() string { return c.dir }

// JoinMemoryCgroup moves this process into the cgroup at dir (a
// MemoryCgroup's Dir), so that everything it allocates from then on counts
// against the cgroup's limit.
func JoinMemoryCgroup(dir string) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0)
}

// Peak returns the largest memory use the cgroup has seen, in bytes (page
// cache of its processes' files included, as a container's limit counts
// it).
func (c *MemoryCgroup) Peak() (uint64, error) {
	name := "memory.max_usage_in_bytes"
	if c.v2 {
		name = "memory.peak"
	}
	data, err := os.ReadFile(filepath.Join(c.dir, name))
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
}

// OOMKills returns how many processes of the cgroup the kernel killed for
// lack of memory.
func (c *MemoryCgroup) OOMKills() (uint64, error) {
	name := "memory.oom_control"
	if c.v2 {
		name = "memory.events"
	}
	data, err := os.ReadFile(filepath.Join(c.dir, name))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "oom_kill "); ok {
			return strconv.ParseUint(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no oom_kill count in %s of cgroup %s", name, c.dir)
}

// Remove removes the cgroup; its processes must have exited.
func (c *MemoryCgroup) Remove() error { return os.Remove(c.dir) }
