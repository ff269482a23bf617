package benchkit

import (
	"testing"
	"time"
)

func TestReadProcessMemory(t *testing.T) {
	ballast := make([]byte, 64<<20)
	for i := range ballast {
		ballast[i] = 1
	}
	m, err := ReadProcessMemory(0)
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS < 64<<20 || m.PeakRSS < m.RSS {
		t.Errorf("RSS %d and peak %d with 64 MiB touched", m.RSS, m.PeakRSS)
	}
	ballast = nil
	if err := ResetPeakRSS(); err != nil {
		t.Fatal(err)
	}
	after, err := ReadProcessMemory(0)
	if err != nil {
		t.Fatal(err)
	}
	if after.PeakRSS < after.RSS {
		t.Errorf("peak %d below RSS %d after a reset", after.PeakRSS, after.RSS)
	}
}

func TestProcessCPUTime(t *testing.T) {
	before, err := ProcessCPUTime(0)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		now, err := ProcessCPUTime(0)
		if err != nil {
			t.Fatal(err)
		}
		if now > before {
			return
		}
	}
	t.Error("no CPU time counted after 5 s of spinning")
}
