package main

import (
	"fmt"
	"html"
	"math"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/kubetyped/informer/internal/benchkit"
)

// Chart geometry, in pixels.
const (
	svgLabelWidth = 470
	svgPlotWidth  = 420
	svgRightPad   = 80
	svgRowHeight  = 20
	svgTop        = 50
	svgBottom     = 40
)

// writeSVGFile writes a horizontal bar chart of every row's ratio on a
// logarithmic axis to path, leaving out the rows without one.
func writeSVGFile(path string, rows []benchkit.Row) error {
	if err := os.WriteFile(path, []byte(ratioChart(rows)), 0o644); err != nil {
		return fmt.Errorf("writing chart: %w", err)
	}
	return nil
}

// ratioChart renders the chart of the rows that have a ratio, infinite or
// not, as an SVG document.
func ratioChart(all []benchkit.Row) string {
	var rows []benchkit.Row
	for _, r := range all {
		if r.Ratio != nil || infiniteRatio(r) {
			rows = append(rows, r)
		}
	}
	lo, hi := ratioDecades(rows)
	x := func(ratio float64) float64 {
		return svgLabelWidth + svgPlotWidth*(math.Log10(ratio)-lo)/(hi-lo)
	}
	width := svgLabelWidth + svgPlotWidth + svgRightPad
	height := svgTop + svgRowHeight*len(rows) + svgBottom

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">client-go ÷ ours (log scale; right of 1× = ours is faster or smaller)</text>`+"\n")
	plotBottom := svgTop + svgRowHeight*len(rows)
	for d := lo; d <= hi; d++ {
		gx := x(math.Pow(10, d))
		stroke := "#ddd"
		if d == 0 {
			stroke = "#333"
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", gx, svgTop-5, gx, plotBottom, stroke)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", gx, plotBottom+16, html.EscapeString(decadeLabel(d)))
	}
	for i, r := range rows {
		y := svgTop + i*svgRowHeight
		label := fmt.Sprintf("%s %s · %s", r.Workload, r.Case, r.Metric)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", svgLabelWidth-8, y+14, html.EscapeString(label))
		ratio, text := math.Pow(10, hi), "∞"
		if r.Ratio != nil {
			ratio, text = *r.Ratio, formatRatio(r.Ratio)
		}
		x0, x1 := x(1), x(ratio)
		fill := "#2e7d32"
		if ratio < 1 {
			x0, x1, fill = x1, x0, "#c62828"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", x0, y+3, math.Max(x1-x0, 1), svgRowHeight-6, fill)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", math.Max(x(ratio), x(1))+4, y+14, html.EscapeString(text))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// ratioDecades returns the powers of ten (as exponents) that bound every
// finite ratio, always including 0.1× to 10×.
func ratioDecades(rows []benchkit.Row) (lo, hi float64) {
	lo, hi = -1, 1
	for _, r := range rows {
		if r.Ratio == nil || *r.Ratio <= 0 {
			continue
		}
		l := math.Log10(*r.Ratio)
		lo, hi = math.Min(lo, math.Floor(l)), math.Max(hi, math.Ceil(l))
	}
	return lo, hi
}

// retainedMetric is the metric of the rows retainedChart draws: W6's
// retained heap per cached pod, one row per configuration.
const retainedMetric = "retained heap/pod (B)"

// writeRetainedSVGFile writes a bar chart of the retained bytes per pod of
// every configuration W6 measured (client-go's and ours side by side) to
// path. It fails when rows hold no such figure (W6 did not run).
func writeRetainedSVGFile(path string, rows []benchkit.Row) error {
	var retained []benchkit.Row
	for _, r := range rows {
		if r.Metric == retainedMetric {
			retained = append(retained, r)
		}
	}
	if len(retained) == 0 {
		return fmt.Errorf("no %q rows to chart: run W6 (-run W6)", retainedMetric)
	}
	if err := os.WriteFile(path, []byte(retainedChart(retained)), 0o644); err != nil {
		return fmt.Errorf("writing chart: %w", err)
	}
	return nil
}

// retainedChart renders two bars per row, client-go's figure above ours, on
// a linear axis from zero: absolute bytes, so that the configurations can be
// compared with each other and not only with client-go.
func retainedChart(rows []benchkit.Row) string {
	most := 0.0
	for _, r := range rows {
		most = math.Max(most, math.Max(r.Theirs, r.Ours))
	}
	// The axis ends at the next multiple of 5,000 B, in steps of 5,000.
	const step = 5000
	top := math.Max(step, math.Ceil(most/step)*step)
	// W6's case names are long; the label column grows to fit them, at
	// about 6.5 px per character of 12 px sans-serif.
	labelWidth := svgLabelWidth
	for _, r := range rows {
		labelWidth = max(labelWidth, int(6.5*float64(utf8.RuneCountInString(r.Workload+" "+r.Case)))+16)
	}
	x := func(v float64) float64 { return float64(labelWidth) + svgPlotWidth*v/top }
	groupHeight := 2*svgRowHeight + 8
	width := labelWidth + svgPlotWidth + svgRightPad
	plotBottom := svgTop + groupHeight*len(rows)
	height := plotBottom + svgBottom

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">Retained heap per cached pod (B): client-go (grey) and ours (green)</text>`+"\n")
	for v := 0.0; v <= top; v += step {
		gx := x(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", gx, svgTop-5, gx, plotBottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", gx, plotBottom+16, groupThousands(int64(v)))
	}
	for i, r := range rows {
		y := svgTop + i*groupHeight
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelWidth-8, y+svgRowHeight+4, html.EscapeString(r.Workload+" "+r.Case))
		for j, bar := range []struct {
			value float64
			fill  string
		}{{r.Theirs, "#9e9e9e"}, {r.Ours, "#2e7d32"}} {
			by := y + j*svgRowHeight
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", labelWidth, by+3, math.Max(x(bar.value)-float64(labelWidth), 1), svgRowHeight-6, bar.fill)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", x(bar.value)+4, by+14, groupThousands(int64(math.Round(bar.value))))
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// decadeLabel names the axis line at 10^d.
func decadeLabel(d float64) string {
	if d < 0 {
		return strings.TrimRight(fmt.Sprintf("%.*f", int(-d), math.Pow(10, d)), "0") + "×"
	}
	return groupThousands(int64(math.Pow(10, d))) + "×"
}
