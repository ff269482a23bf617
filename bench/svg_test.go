package main

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRatioChartIsWellFormedWithOneBarPerRow(t *testing.T) {
	rows := []row{
		newRow("W3", "(a) app=app-7 & <more>", "ns/op", 5000, 1),
		newRow("W5", "GetByKey", "ns/op", 30, 45),
		newRow("W3", "(c)", "allocs/op", 29, 0),
	}
	path := filepath.Join(t.TempDir(), "chart.svg")
	if err := writeSVGFile(path, rows); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rects, texts []string
	dec := xml.NewDecoder(strings.NewReader(string(data)))
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
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
	// The background, then one bar per row: green when ours wins, red otherwise.
	if diff := cmp.Diff([]string{"white", "#2e7d32", "#c62828", "#2e7d32"}, rects); diff != "" {
		t.Errorf("rect fills (-want +got):\n%s", diff)
	}
	for _, want := range []string{"W3 (a) app=app-7 & <more> · ns/op", "5,000×", "0.67×", "∞", "0.1×", "1×", "10,000×"} {
		found := false
		for _, text := range texts {
			found = found || text == want
		}
		if !found {
			t.Errorf("no text %q in the chart; texts: %q", want, texts)
		}
	}
}

func TestRatioDecadesCoverEveryRatio(t *testing.T) {
	lo, hi := ratioDecades([]row{newRow("", "", "", 1, 250), newRow("", "", "", 4911, 1)})
	if lo != -3 || hi != 4 {
		t.Fatalf("decades [%v, %v], want [-3, 4]", lo, hi)
	}
	got := []string{decadeLabel(-3), decadeLabel(-1), decadeLabel(0), decadeLabel(3)}
	if diff := cmp.Diff([]string{"0.001×", "0.1×", "1×", "1,000×"}, got); diff != "" {
		t.Fatalf("labels (-want +got):\n%s", diff)
	}
}
