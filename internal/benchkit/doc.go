// Package benchkit holds what the benchmark harnesses share: the result
// table of shared/benchmarks.md's output contract (Row, Table), the header
// every table is printed under (Table.Legend, Run: the commit, time, Go and
// module versions and load average of a run, and whether it was a -quick
// smoke run), and the measuring helpers (medians, the heap sampler and the
// GC cycles it saw, process CPU time and a thread's, a CPU profile of a whole run). The
// harnesses are bench/ in the core module, crcache/bench and
// e2e/cmd/realbench; each keeps its own ratio rule, cell formats and batch
// timing, which differ on purpose, and all print ratios as the other
// implementation ÷ ours.
package benchkit
