package benchkit

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
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
	// smaller. Each harness says when a row has none (nil) and how a ratio
	// is derived from its rounds.
	Ratio *float64
}

// Table is one harness's layout of the output contract: a Markdown table
// with the columns workload, case, metric, Theirs, Ours and ratio, or the
// same rows as JSON lines with the keys workload, case, metric, TheirsKey,
// ours and ratio (null for a row without a ratio). A Table is a value and
// safe for concurrent use.
type Table struct {
	// Theirs heads the Markdown column of the implementation compared
	// against, as "client-go".
	Theirs string
	// TheirsKey is that column's JSON key, as "clientgo".
	TheirsKey string
	// Ours heads the Markdown column of this module's implementation.
	Ours string
	// Value prints a figure of metric in a Markdown cell.
	Value func(metric string, v float64) string
	// Ratio prints a row's ratio in a Markdown cell; nil is a row without
	// one.
	Ratio func(ratio *float64) string
}

// WriteMarkdown writes rows to w as one Markdown table, in one write.
func (t Table) WriteMarkdown(w io.Writer, rows []Row) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| workload | case | metric | %s | %s | ratio |\n", t.Theirs, t.Ours)
	b.WriteString("|---|---|---|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n",
			r.Workload, r.Case, r.Metric, t.Value(r.Metric, r.Theirs), t.Value(r.Metric, r.Ours), t.Ratio(r.Ratio))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSONLines writes rows to w as one JSON object per line, a write per
// line. A row that JSON cannot hold (an infinite or NaN figure) stops it
// with an error naming the row; the lines before it are written.
func (t Table) WriteJSONLines(w io.Writer, rows []Row) error {
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
		{t.TheirsKey, r.Theirs},
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
