//go:build race

package testkit

// Race tells whether the tests run with the race detector, for a test
// that measures the heap on a workload the detector makes minutes long.
const Race = true
