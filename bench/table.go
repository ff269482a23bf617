package main

import (
	"math"
	"strconv"
	"strings"

	"github.com/kubetyped/informer/internal/benchkit"
)

// newRow builds a row and its ratio.
func newRow(workload, kase, metric string, clientGo, ours float64) benchkit.Row {
	r := benchkit.Row{Workload: workload, Case: kase, Metric: metric, Theirs: clientGo, Ours: ours}
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

// withoutRatio returns r without its ratio: for a row whose figures are
// each side's own ratio (W6 (d)'s peak over its steady state), where
// client-go's divided by ours would mean nothing. Its metric says so.
func withoutRatio(r benchkit.Row) benchkit.Row {
	r.Ratio = nil
	return r
}

// oursOnly returns a row of a figure measured on ours alone: no client-go
// figure, no ratio.
func oursOnly(workload, kase, metric string, ours float64) benchkit.Row {
	return benchkit.Row{Workload: workload, Case: kase, Metric: metric, Ours: ours, OursOnly: true}
}

// infiniteRatio reports whether r's ratio is infinite: ours measured 0
// and client-go did not. A row whose Ratio is nil otherwise has none.
func infiniteRatio(r benchkit.Row) bool {
	return r.Ratio == nil && r.Ours == 0 && r.Theirs != 0
}

// table is this harness's layout of the output contract: figures as
// formatValue prints them, ratios as formatRatio does, "∞" for an infinite
// ratio and "–" for a row without one.
var table = benchkit.Table{
	Theirs:    "client-go",
	TheirsKey: "clientgo",
	Ours:      "ours",
	Workloads: `docs/benchmarks.md, "The workloads"`,
	Value:     func(_ string, v float64) string { return formatValue(v) },
	Ratio: func(r benchkit.Row) string {
		if r.Ratio == nil && !infiniteRatio(r) {
			return "–"
		}
		return formatRatio(r.Ratio)
	},
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
