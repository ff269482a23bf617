package main

import (
	"fmt"
	"html"
	"math"
	"os"
	"strings"
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
// logarithmic axis to path.
func writeSVGFile(path string, rows []row) error {
	if err := os.WriteFile(path, []byte(ratioChart(rows)), 0o644); err != nil {
		return fmt.Errorf("writing chart: %w", err)
	}
	return nil
}

// ratioChart renders the chart as an SVG document.
func ratioChart(rows []row) string {
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
func ratioDecades(rows []row) (lo, hi float64) {
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

// decadeLabel names the axis line at 10^d.
func decadeLabel(d float64) string {
	if d < 0 {
		return strings.TrimRight(fmt.Sprintf("%.*f", int(-d), math.Pow(10, d)), "0") + "×"
	}
	return groupThousands(int64(math.Pow(10, d))) + "×"
}
