package benchkit

import (
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"time"
)

// Median returns the middle value of vs, or the mean of the two middle
// values for an even count. It leaves vs as it is; vs must not be empty.
func Median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MedianOf returns the Median of metric over runs.
func MedianOf[S any](runs []S, metric func(S) float64) float64 {
	vs := make([]float64, len(runs))
	for i, r := range runs {
		vs[i] = metric(r)
	}
	return Median(vs)
}

// heapObjectsMetric is the runtime/metrics name of the bytes held by heap
// objects, live or not yet swept: the heap's size as the GC paces it.
const heapObjectsMetric = "/memory/classes/heap/objects:bytes"

// ReadHeapObjects returns the bytes held by heap objects now, live or not
// yet swept: the heap's size as the garbage collector paces it.
func ReadHeapObjects() uint64 {
	sample := []metrics.Sample{{Name: heapObjectsMetric}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// gcCyclesMetric is the runtime/metrics name of the number of completed
// GC cycles.
const gcCyclesMetric = "/gc/cycles/total:gc-cycles"

// HeapSampler records the largest heap size (as ReadHeapObjects measures
// it) seen from StartHeapSampler to Stop, and how many GC cycles completed
// in between. It allocates nothing while it samples, so that it does not
// change the allocation figures measured beside it.
//
// The heap it samples holds garbage until a cycle sweeps it: when no cycle
// completes in the window, the largest sample is the heap at the start
// plus the bytes allocated since, not a peak of what the window kept. A
// harness calls its figure a peak only when GCCycles is at least 1.
type HeapSampler struct {
	stop   chan struct{}
	done   chan struct{}
	peak   uint64
	cycles [2]uint64 // completed GC cycles at the start and at Stop
}

// StartHeapSampler samples the heap size now, every interval on a goroutine
// of its own, and once more at Stop. While the heap stays within
// idleHeapChange of its last sample, the wait between samples doubles, up
// to idleIntervals times interval, and it is back at interval as soon as
// the heap moves: a sample costs about 30 µs of CPU, so that sampling
// every millisecond took about 30 ms of CPU per second of a process that
// merely waits (E4's quiet warm start waits about a second for a
// bookmark), and the heap grows only by allocating, which a sample after
// the wait still sees unless a collection swept it meanwhile.
func StartHeapSampler(interval time.Duration) *HeapSampler {
	s := &HeapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	sample := []metrics.Sample{{Name: heapObjectsMetric}, {Name: gcCyclesMetric}}
	var last uint64
	read := func() bool {
		metrics.Read(sample)
		v := sample[0].Value.Uint64()
		s.peak = max(s.peak, v)
		moved := v > last+idleHeapChange || v+idleHeapChange < last
		last = v
		return moved
	}
	read()
	s.cycles[0] = sample[1].Value.Uint64()
	go func() {
		defer close(s.done)
		wait := interval
		timer := time.NewTimer(wait)
		defer timer.Stop()
		for {
			select {
			case <-s.stop:
				read()
				s.cycles[1] = sample[1].Value.Uint64()
				return
			case <-timer.C:
				if read() {
					wait = interval
				} else {
					wait = min(2*wait, idleIntervals*interval)
				}
				timer.Reset(wait)
			}
		}
	}()
	return s
}

// idleHeapChange and idleIntervals are how little the heap must have
// moved for StartHeapSampler to wait longer, and how much longer at most.
const (
	idleHeapChange = 256 << 10
	idleIntervals  = 16
)

// Stop ends sampling, waits for the sampling goroutine to return and
// returns the peak heap size in bytes. It must be called exactly once.
func (s *HeapSampler) Stop() uint64 {
	close(s.stop)
	<-s.done
	return s.peak
}

// GCCycles returns the number of GC cycles that completed between
// StartHeapSampler and Stop. It must be called after Stop.
func (s *HeapSampler) GCCycles() uint64 {
	return s.cycles[1] - s.cycles[0]
}

// StartCPUProfile writes a CPU profile of the process to a file it creates
// at path, until the stop it returns is called; stop ends the profile and
// closes the file.
func StartCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
