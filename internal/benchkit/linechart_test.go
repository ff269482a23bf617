package benchkit

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

func TestLineChartIsWellFormed(t *testing.T) {
	svg := LineChart{
		Title: "client-go ÷ ours & more", XLabel: "pods", YLabel: "ratio", Reference: 1,
		Series: []Series{
			{Name: "CPU", Points: []Point{{5000, 1.7}, {150000, 1.9}, {20000, 1.8}}},
			{Name: "peak RSS <dedup>", Points: []Point{{5000, 2.1}}, Dashed: true},
		},
	}.SVG()
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, svg)
		}
	}
	for _, want := range []string{"CPU", "peak RSS &lt;dedup&gt;", "150,000", "<polyline"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
}
