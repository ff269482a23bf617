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

// table is this harness's layout of the output contract: figures as
// formatValue prints them, ratios as formatRatio does.
var table = benchkit.Table{
	Theirs:    "client-go",
	TheirsKey: "clientgo",
	Ours:      "ours",
	Value:     func(_ string, v float64) string { return formatValue(v) },
	Ratio:     formatRatio,
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
