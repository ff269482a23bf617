package benchkit

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Row is one line of a comparison: one metric of one workload case,
// measured on the implementation compared against (Theirs) and on this
// module's (Ours).
type Row struct {
	Workload string
	Case     string
	Metric   string
	Theirs   float64
	Ours     float64
	// Ratio is Theirs ÷ Ours, so that above 1 means ours is faster or
	// smaller, in every row of every harness: never the other way round.
	// Each harness says when a row has none (nil; a row whose figures have
	// no meaningful ratio says so in its case or metric) and how a ratio is
	// derived from its rounds.
	Ratio *float64
	// OursOnly marks a row measured on this module's implementation alone:
	// its Theirs is not a figure (printed "–", null in JSON) and it has no
	// ratio.
	OursOnly bool
}

// Table is one harness's layout of the output contract: a header (the
// legend, then the Run's lines), a Markdown table with the columns
// workload, case, metric, Theirs, Ours and ratio, and the Run's notes; or
// the same as JSON lines: first an object whose only key is "run" (the
// header, legend and notes), then one object per row with the keys
// workload, case, metric, TheirsKey, ours and ratio (null for a row
// without a ratio). A Table is a value and safe for concurrent use.
type Table struct {
	// Theirs heads the Markdown column of the implementation compared
	// against, as "client-go".
	Theirs string
	// TheirsKey is that column's JSON key, as "clientgo".
	TheirsKey string
	// Ours heads the Markdown column of this module's implementation.
	Ours string
	// Workloads says where the repository defines the workloads, as
	// `docs/benchmarks.md, "The workloads"`: the legend's second line.
	Workloads string
	// Value prints a figure of metric in a Markdown cell.
	Value func(metric string, v float64) string
	// Ratio prints a row's ratio in a Markdown cell, its Ratio nil or not.
	Ratio func(r Row) string
}

// Legend returns the two lines that head every table: which way the ratio
// goes, and where the workloads are defined.
func (t Table) Legend() []string {
	return []string{
		fmt.Sprintf("ratio = %s ÷ %s (> 1: %s faster or smaller)", t.Theirs, t.Ours, t.Ours),
		"workloads: defined in " + t.Workloads,
	}
}

// WriteMarkdown writes run's header, rows as one Markdown table and run's
// notes to w, in one write. The header is a list: the legend's two lines,
// the run's line (command, commit, time, versions, load averages) and
// run.Smoke if any.
func (t Table) WriteMarkdown(w io.Writer, run Run, rows []Row) error {
	var b strings.Builder
	for _, line := range t.Legend() {
		b.WriteString("- " + line + "\n")
	}
	b.WriteString("- " + run.describe() + "\n")
	if run.Smoke != "" {
		b.WriteString("- " + run.Smoke + "\n")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "| workload | case | metric | %s | %s | ratio |\n", t.Theirs, t.Ours)
	b.WriteString("|---|---|---|---:|---:|---:|\n")
	for _, r := range rows {
		theirs := "–"
		if !r.OursOnly {
			theirs = t.Value(r.Metric, r.Theirs)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n",
			r.Workload, r.Case, r.Metric, theirs, t.Value(r.Metric, r.Ours), t.Ratio(r))
	}
	for _, n := range run.Notes {
		b.WriteString("\n" + n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// jsonRun is the header object of JSON output, under the key "run".
type jsonRun struct {
	Legend    []string `json:"legend"`
	Command   string   `json:"command"`
	Commit    string   `json:"commit"`
	Start     string   `json:"start"`
	End       string   `json:"end,omitempty"`
	LoadStart string   `json:"loadStart"`
	LoadEnd   string   `json:"loadEnd,omitempty"`
	Go        string   `json:"go"`
	Modules   []string `json:"modules"`
	Smoke     string   `json:"smoke,omitempty"`
	Notes     []string `json:"notes,omitempty"`
}

// WriteJSONLines writes run's header as one JSON object with the single key
// "run", then rows as one JSON object per line, a write per line. A row
// that JSON cannot hold (an infinite or NaN figure) stops it with an error
// naming the row; the lines before it are written.
func (t Table) WriteJSONLines(w io.Writer, run Run, rows []Row) error {
	header := jsonRun{
		Legend: t.Legend(), Command: run.Command, Commit: run.Commit, Start: run.Start.UTC().Format(time.RFC3339),
		LoadStart: run.LoadStart, LoadEnd: run.LoadEnd, Go: run.Go, Modules: run.Modules, Smoke: run.Smoke, Notes: run.Notes,
	}
	if !run.End.IsZero() {
		header.End = run.End.UTC().Format(time.RFC3339)
	}
	line, err := json.Marshal(struct {
		Run jsonRun `json:"run"`
	}{header})
	if err != nil {
		return fmt.Errorf("encoding the run's header: %w", err)
	}
	if _, err := w.Write(append(line, '\n')); err != nil {
		return err
	}
	for _, r := range rows {
		line, err := t.jsonLine(r)
		if err != nil {
			return fmt.Errorf("encoding row %s/%s/%s: %w", r.Workload, r.Case, r.Metric, err)
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return nil
}

// jsonLine encodes r as encoding/json encodes a struct of the same fields
// (HTML characters escaped, newline-terminated); the struct tags cannot be
// used because the key of the Theirs column is the Table's.
func (t Table) jsonLine(r Row) ([]byte, error) {
	fields := [...]struct {
		key   string
		value any
	}{
		{"workload", r.Workload},
		{"case", r.Case},
		{"metric", r.Metric},
		{t.TheirsKey, theirsValue(r)},
		{"ours", r.Ours},
		{"ratio", r.Ratio},
	}
	line := []byte{'{'}
	for i, f := range fields {
		key, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		value, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			line = append(line, ',')
		}
		line = append(append(append(line, key...), ':'), value...)
	}
	return append(line, "}\n"...), nil
}

// theirsValue is r's Theirs as JSON encodes it: nil (null) for a row
// measured on ours alone.
func theirsValue(r Row) any {
	if r.OursOnly {
		return nil
	}
	return r.Theirs
}
