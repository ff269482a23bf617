package benchkit

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
)

// LineChart is a chart of series of points against a logarithmic x axis
// (a size, such as the number of pods) and a linear y axis (a ratio), as
// E7's ratios against N are drawn.
type LineChart struct {
	Title, XLabel, YLabel string
	// Series are the lines, each drawn in its own color with its name in
	// the legend.
	Series []Series
	// Reference, if not zero, is a y value drawn as a dashed line (1 for
	// ratios).
	Reference float64
}

// Series is one line of a LineChart.
type Series struct {
	Name   string
	Points []Point
	// Dashed draws the line dashed.
	Dashed bool
}

// Point is one point of a Series.
type Point struct{ X, Y float64 }

// Chart geometry, in pixels.
const (
	chartWidth, chartHeight = 720, 420
	chartLeft, chartRight   = 60, 250
	chartTop, chartBottom   = 40, 50
)

// chartColors are the series' colors, in order.
var chartColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}

// SVG returns the chart as an SVG document.
func (c LineChart) SVG() string {
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), 0.0, math.Inf(-1)
	for _, s := range c.Series {
		for _, p := range s.Points {
			xmin, xmax = min(xmin, p.X), max(xmax, p.X)
			ymax = max(ymax, p.Y)
		}
	}
	if c.Reference > 0 {
		ymax = max(ymax, c.Reference)
	}
	if math.IsInf(xmin, 1) || xmin <= 0 {
		xmin, xmax = 1, 10
	}
	if xmax <= xmin {
		xmax = xmin * 10
	}
	ymax = niceCeil(ymax * 1.1)
	plotW := float64(chartWidth - chartLeft - chartRight)
	plotH := float64(chartHeight - chartTop - chartBottom)
	lx0, lx1 := math.Log10(xmin), math.Log10(xmax)
	pad := (lx1 - lx0) * 0.05
	lx0, lx1 = lx0-pad, lx1+pad
	x := func(v float64) float64 { return chartLeft + plotW*(math.Log10(v)-lx0)/(lx1-lx0) }
	y := func(v float64) float64 { return chartTop + plotH*(1-(v-ymin)/(ymax-ymin)) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", chartWidth, chartHeight)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartWidth, chartHeight)
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", html.EscapeString(c.Title))
	// Axes and grid.
	for _, t := range yTicks(ymax) {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", chartLeft, y(t), chartLeft+plotW, y(t))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", chartLeft-6, y(t)+4, strconv.FormatFloat(t, 'g', 3, 64))
	}
	for _, t := range xTicks(c.Series) {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.0f" stroke="#e5e5e5"/>`+"\n", x(t), chartTop, x(t), chartTop+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", x(t), chartTop+plotH+16, groupDigits(t))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", chartLeft, chartTop, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">%s</text>`+"\n", chartLeft+plotW/2, chartHeight-10, html.EscapeString(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %.0f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", chartTop+plotH/2, html.EscapeString(c.YLabel))
	if c.Reference > 0 {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#333" stroke-dasharray="2 3"/>`+"\n", chartLeft, y(c.Reference), chartLeft+plotW, y(c.Reference))
	}
	// Lines and legend.
	for i, s := range c.Series {
		color := chartColors[i%len(chartColors)]
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		pts := slices.Clone(s.Points)
		slices.SortFunc(pts, func(a, b Point) int { return int(math.Copysign(1, a.X-b.X)) })
		var path []string
		for _, p := range pts {
			path = append(path, fmt.Sprintf("%.1f,%.1f", x(p.X), y(p.Y)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x(p.X), y(p.Y), color)
		}
		if len(path) > 1 {
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(path, " "), color, dash)
		}
		ly := chartTop + 10 + 18*i
		lx := chartWidth - chartRight + 14
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+22, ly, color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+28, ly+4, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// yTicks returns about five ticks from 0 to ymax.
func yTicks(ymax float64) []float64 {
	step := niceCeil(ymax / 5)
	var out []float64
	for t := 0.0; t <= ymax+step/1e6; t += step {
		out = append(out, t)
	}
	return out
}

// xTicks returns the distinct x values of the series.
func xTicks(series []Series) []float64 {
	var out []float64
	for _, s := range series {
		for _, p := range s.Points {
			if !slices.Contains(out, p.X) {
				out = append(out, p.X)
			}
		}
	}
	slices.Sort(out)
	return out
}

// groupDigits prints v as an integer with thousands separators.
func groupDigits(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
