package benchkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// QuickNote is the line a -quick run prints under its legend: its figures
// come from small sizes and one repetition, so that a reader who pastes or
// quotes them knows they are not the ones to compare.
const QuickNote = "-quick: a smoke run (small sizes, one repetition): its ratios show that the harness works and checks its results; they are not the product's figures (docs/benchmarks.md has those)"

// Run describes one run of a harness: where its figures come from (the
// lines that head its output) and the notes printed under its table.
type Run struct {
	// Command is the harness's name and arguments, as "bench -quick".
	Command string
	// Commit is the revision the harness was built from, with "-dirty"
	// when the work tree had uncommitted changes, or "unknown".
	Commit string
	// Start and End bound the run; End is zero until Finish.
	Start, End time.Time
	// LoadStart and LoadEnd are the machine's load averages over 1, 5 and
	// 15 minutes at Start and at End (LoadAverage).
	LoadStart, LoadEnd string
	// Go is the Go version, the platform and GOMAXPROCS.
	Go string
	// Modules are the versions of the implementations compared, as
	// "k8s.io/client-go v0.37.2".
	Modules []string
	// Smoke, when not empty, says on a line of its own why the run's ratios
	// are not the product's figures (QuickNote for a -quick run).
	Smoke string
	// Notes are printed under the table, a paragraph each, and in the
	// header object of JSON output.
	Notes []string
}

// StartRun describes the run starting now: the command line, the commit,
// the time, the load average, the Go version and the versions of the
// modules named by modules (module paths, as "k8s.io/client-go") in this
// binary's build.
func StartRun(modules ...string) Run {
	info, _ := debug.ReadBuildInfo()
	return Run{
		Command:   strings.Join(append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...), " "),
		Commit:    commitOf(info, gitDescribe),
		Start:     time.Now(),
		LoadStart: LoadAverage(),
		Go:        fmt.Sprintf("%s %s/%s, GOMAXPROCS %d", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0)),
		Modules:   moduleVersions(info, modules),
	}
}

// Finish records the end of the run and the load average then.
func (r *Run) Finish() {
	r.End = time.Now()
	r.LoadEnd = LoadAverage()
}

// commitOf returns the VCS revision info records ("-dirty" appended when
// the tree was modified): what `go build` stamps into a binary. `go run`
// stamps none, so it then asks git (describe) for the checkout the
// command runs in, and says "unknown" when that fails too.
func commitOf(info *debug.BuildInfo, describe func() (string, error)) string {
	var revision string
	modified := false
	if info != nil {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if revision != "" {
		if len(revision) > 12 {
			revision = revision[:12]
		}
		if modified {
			revision += "-dirty"
		}
		return revision
	}
	if out, err := describe(); err == nil && out != "" {
		return out
	}
	return "unknown"
}

// gitDescribe names the commit checked out in the working directory, with
// "-dirty" when tracked files have changes.
func gitDescribe() (string, error) {
	out, err := exec.Command("git", "describe", "--always", "--dirty", "--abbrev=12").Output()
	return strings.TrimSpace(string(out)), err
}

// moduleVersions returns "path version" for each of paths as info's
// dependencies hold it (the replacement, when the module is replaced), and
// "path (not in this build)" for one they do not hold.
func moduleVersions(info *debug.BuildInfo, paths []string) []string {
	var out []string
	for _, p := range paths {
		v := p + " (not in this build)"
		if info != nil {
			for _, d := range info.Deps {
				if d.Path != p {
					continue
				}
				v = p + " " + d.Version
				if d.Replace != nil {
					v = p + " replaced by " + strings.TrimSpace(d.Replace.Path+" "+d.Replace.Version)
				}
			}
		}
		out = append(out, v)
	}
	return out
}

// LoadAverage returns the machine's load averages over 1, 5 and 15 minutes
// from /proc/loadavg, as "1.20 0.90 0.80", or "unknown" where that file
// cannot be read (not Linux).
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return parseLoadAverage(string(b))
}

// parseLoadAverage returns the first three fields of /proc/loadavg's
// content, or "unknown" when it has fewer.
func parseLoadAverage(content string) string {
	f := strings.Fields(content)
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// describe is the run's line of the header: the command, commit, time,
// versions and load averages.
func (r Run) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run: `%s` at commit %s, %s; %s", r.Command, r.Commit, r.period(), r.Go)
	for _, m := range r.Modules {
		b.WriteString(", " + m)
	}
	fmt.Fprintf(&b, "; load average %s at the start", r.LoadStart)
	if r.LoadEnd != "" {
		fmt.Fprintf(&b, ", %s at the end", r.LoadEnd)
	}
	return b.String()
}

// period prints Start to End in UTC, the date once when both fall on it.
func (r Run) period() string {
	const day, clock = "2006-01-02", "15:04:05"
	start := r.Start.UTC()
	if r.End.IsZero() {
		return start.Format(day+" "+clock) + " UTC"
	}
	end := r.End.UTC()
	if end.Format(day) == start.Format(day) {
		return start.Format(day+" "+clock) + "–" + end.Format(clock) + " UTC"
	}
	return start.Format(day+" "+clock) + " – " + end.Format(day+" "+clock) + " UTC"
}
