// Package benchkit holds what the benchmark harnesses share: the result
// table of shared/benchmarks.md's output contract (Row, Table) and the
// measuring helpers (medians, the heap sampler, process CPU time, a CPU
// profile of a whole run). The harnesses are bench/ in the core module,
// crcache/bench and e2e/cmd/realbench; each keeps its own ratio rule, cell
// formats and batch timing, which differ on purpose.
package benchkit
