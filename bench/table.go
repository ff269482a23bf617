package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// row is one line of the comparison: one metric of one workload case,
// measured on both implementations.
type row struct {
	Workload string  `json:"workload"`
	Case     string  `json:"case"`
	Metric   string  `json:"metric"`
	ClientGo float64 `json:"clientgo"`
	Ours     float64 `json:"ours"`
	// Ratio is ClientGo / Ours: above 1 means ours is faster or smaller.
	// It is nil when Ours is 0 and ClientGo is not (an infinite ratio).
	Ratio *float64 `json:"ratio"`
}

// newRow builds a row and its ratio.
func newRow(workload, kase, metric string, clientGo, ours float64) row {
	r := row{Workload: workload, Case: kase, Metric: metric, ClientGo: clientGo, Ours: ours}
	switch {
	case ours != 0:
		q := clientGo / ours
		r.Ratio = &q
	case clientGo == 0:
		one := 1.0
		r.Ratio = &one
	}
	return r
}

// writeMarkdown prints rows as one Markdown table.
func writeMarkdown(w io.Writer, rows []row) error {
	var b strings.Builder
	b.WriteString("| workload | case | metric | client-go | ours | ratio |\n")
	b.WriteString("|---|---|---|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n",
			r.Workload, r.Case, r.Metric, formatValue(r.ClientGo), formatValue(r.Ours), formatRatio(r.Ratio))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeJSONLines prints rows as one JSON object per line.
func writeJSONLines(w io.Writer, rows []row) error {
	enc := json.NewEncoder(w)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("encoding row %s/%s/%s: %w", r.Workload, r.Case, r.Metric, err)
		}
	}
	return nil
}

// formatValue prints a measured value with a precision that suits its
// magnitude: integers with thousands separators from 1,000 up.
func formatValue(v float64) string {
	switch {
	case math.Abs(v) >= 1000:
		return groupThousands(int64(math.Round(v)))
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// formatRatio prints a ratio as "12.3×"; nil means infinite.
func formatRatio(r *float64) string {
	if r == nil {
		return "∞"
	}
	if *r >= 100 {
		return groupThousands(int64(math.Round(*r))) + "×"
	}
	return strconv.FormatFloat(*r, 'f', 2, 64) + "×"
}

// groupThousands prints n with commas between groups of three digits.
func groupThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}
