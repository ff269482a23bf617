package main

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubetyped/informer/internal/benchkit"
)

func TestRatioChartIsWellFormedWithOneBarPerRow(t *testing.T) {
	rows := []benchkit.Row{
		newRow("W3", "(a) app=app-7 & <more>", "ns/op", 5000, 1),
		newRow("W5", "GetByKey", "ns/op", 30, 45),
		newRow("W3", "(c)", "allocs/op", 29, 0),
		withoutRatio(newRow("W6", "(d) relist", "peak heap ÷ own steady state (no ratio)", 2.16, 1.11)),
	}
	path := filepath.Join(t.TempDir(), "chart.svg")
	if err := writeSVGFile(path, rows); err != nil {
		t.Fatal(err)
	}
	rects, texts := readChart(t, path)
	// The background, then one bar per row with a ratio: green when ours
	// wins, red otherwise.
	if diff := cmp.Diff([]string{"white", "#2e7d32", "#c62828", "#2e7d32"}, rects); diff != "" {
		t.Errorf("rect fills (-want +got):\n%s", diff)
	}
	for _, want := range []string{"W3 (a) app=app-7 & <more> · ns/op", "5,000×", "0.67×", "∞", "0.1×", "1×", "10,000×"} {
		if !slices.Contains(texts, want) {
			t.Errorf("no text %q in the chart; texts: %q", want, texts)
		}
	}
	if slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, "(d) relist") }) {
		t.Errorf("the row without a ratio is in the chart; texts: %q", texts)
	}
}

func TestRatioDecadesCoverEveryRatio(t *testing.T) {
	lo, hi := ratioDecades([]benchkit.Row{newRow("", "", "", 1, 250), newRow("", "", "", 4911, 1)})
	if lo != -3 || hi != 4 {
		t.Fatalf("decades [%v, %v], want [-3, 4]", lo, hi)
	}
	got := []string{decadeLabel(-3), decadeLabel(-1), decadeLabel(0), decadeLabel(3)}
	if diff := cmp.Diff([]string{"0.001×", "0.1×", "1×", "1,000×"}, got); diff != "" {
		t.Fatalf("labels (-want +got):\n%s", diff)
	}
}

func TestRetainedChartDrawsTwoBarsPerRetainedRow(t *testing.T) {
	rows := []benchkit.Row{
		newRow("W6", "(a) 300 pods cached", retainedMetric, 22530, 14900),
		newRow("W6", "(d) relist", "peak heap ÷ steady state", 2.27, 1.2),
		newRow("W6", "(c) projection", retainedMetric, 22530, 3436),
	}
	path := filepath.Join(t.TempDir(), "retained.svg")
	if err := writeRetainedSVGFile(path, rows); err != nil {
		t.Fatal(err)
	}
	rects, texts := readChart(t, path)
	// The background, then client-go's and our bar for each retained row.
	if diff := cmp.Diff([]string{"white", "#9e9e9e", "#2e7d32", "#9e9e9e", "#2e7d32"}, rects); diff != "" {
		t.Errorf("rect fills (-want +got):\n%s", diff)
	}
	for _, want := range []string{"W6 (a) 300 pods cached", "22,530", "14,900", "W6 (c) projection", "3,436", "0", "25,000"} {
		if !slices.Contains(texts, want) {
			t.Errorf("no text %q in the chart; texts: %q", want, texts)
		}
	}
	if slices.Contains(texts, "W6 (d) relist") {
		t.Errorf("the chart draws a row that is not a retained figure; texts: %q", texts)
	}
}

func TestRetainedChartNeedsW6(t *testing.T) {
	err := writeRetainedSVGFile(filepath.Join(t.TempDir(), "retained.svg"), []benchkit.Row{newRow("W1", "H=1", "ns/event", 2, 1)})
	if err == nil || !strings.Contains(err.Error(), "-run W6") {
		t.Fatalf("error %v, want one that says to run W6", err)
	}
}

// readChart parses the SVG file at path and returns the fill of every rect
// and the content of every text element, in document order.
func readChart(t *testing.T, path string) (rects, texts []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(string(data)))
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return rects, texts
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			inText = tok.Name.Local == "text"
			if tok.Name.Local == "rect" {
				for _, a := range tok.Attr {
					if a.Name.Local == "fill" {
						rects = append(rects, a.Value)
					}
				}
			}
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		case xml.EndElement:
			inText = false
		}
	}
}
