package benchkit

import (
	"os"
	"os/exec"
	"testing"
)

// cgroupChildEnv makes the test binary a process that joins a cgroup and
// touches 256 MiB.
const cgroupChildEnv = "BENCHKIT_CGROUP_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(cgroupChildEnv); dir != "" {
		if err := JoinMemoryCgroup(dir); err != nil {
			os.Exit(3)
		}
		ballast := make([]byte, 256<<20)
		for i := range ballast {
			ballast[i] = 1
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestMemoryCgroup runs a process that needs more than its cgroup's limit
// and one that does not.
func TestMemoryCgroup(t *testing.T) {
	small, err := NewMemoryCgroup("benchkit-test-small", 64<<20)
	if err != nil {
		t.Skipf("no memory cgroup here: %v", err)
	}
	defer small.Remove()
	run := func(c *MemoryCgroup) error {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), cgroupChildEnv+"="+c.Dir())
		return cmd.Run()
	}
	if err := run(small); err == nil {
		t.Error("a process touching 256 MiB completed under a 64 MiB limit")
	}
	if kills, err := small.OOMKills(); err != nil || kills != 1 {
		t.Errorf("OOM kills %d, %v; want 1", kills, err)
	}
	big, err := NewMemoryCgroup("benchkit-test-big", 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Remove()
	if err := run(big); err != nil {
		t.Errorf("a process touching 256 MiB under a 1 GiB limit: %v", err)
	}
	if peak, err := big.Peak(); err != nil || peak < 256<<20 {
		t.Errorf("peak %d, %v; want at least 256 MiB", peak, err)
	}
}
