//go:build unix

package benchkit

import "testing"

func TestCPUTimeCountsWork(t *testing.T) {
	before, err := CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the process has used CPU time (getrusage counts in ticks).
	for {
		now, err := CPUTime()
		if err != nil {
			t.Fatal(err)
		}
		if now > before {
			return
		}
	}
}
