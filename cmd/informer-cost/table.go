package main

import (
	"fmt"
	"html"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/kubetyped/informer"
)

// title names r's informer: its resource, form and namespace.
func (r resourceReport) title() string {
	scope := "all namespaces"
	if r.namespace != "" {
		scope = "namespace " + r.namespace
	}
	return fmt.Sprintf("%s (%s, %s)", r.resource.GroupResource(), r.form, scope)
}

// writeTable prints r: a header, at most rows rows (the largest), and the
// suggestions.
func writeTable(w io.Writer, r resourceReport, rows int) error {
	rep := r.report
	fmt.Fprintf(w, "%s: %d objects, synced in %v\n", r.title(), rep.Objects, r.synced.Round(1_000_000))
	fmt.Fprintf(w, "cache %s (%s an object), of which shared %s (%s); the report took %v\n\n",
		size(rep.Bytes), perObject(rep.Bytes, rep.Objects), size(rep.SharedBytes), share(rep.SharedBytes, rep.Bytes), r.took.Round(1_000_000))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	shown := rep.Rows[:min(rows, len(rep.Rows))]
	width := len("(1000 other rows)")
	for _, row := range shown {
		width = max(width, len(row.Path))
	}
	for _, row := range rep.Suggestions {
		width = max(width, len(row.Path))
	}
	fmt.Fprintf(tw, "%-*s\tbytes\tshare\tshared\tper object\tobjects\t\n", width, "field")
	for _, row := range shown {
		// Padded to the column's width, the path stays left-aligned.
		fmt.Fprintf(tw, "%-*s\t%s\t%s\t%s\t%s\t%d\t\n", width, row.Path, size(row.Bytes), share(row.Bytes, rep.Bytes),
			size(row.SharedBytes), perObject(row.Bytes, rep.Objects), row.Objects)
	}
	if rest := rep.Rows[len(shown):]; len(rest) > 0 {
		var bytes, shared int64
		for _, row := range rest {
			bytes, shared = bytes+row.Bytes, shared+row.SharedBytes
		}
		fmt.Fprintf(tw, "%-*s\t%s\t%s\t%s\t%s\t\t\n", width, fmt.Sprintf("(%d other rows)", len(rest)), size(bytes), share(bytes, rep.Bytes), size(shared), perObject(bytes, rep.Objects))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Suggestions) > 0 {
		fmt.Fprintln(w, "\nto drop (RESTOptions.DropFields; a field's values shared with fields that stay are not saved):")
		for _, row := range rep.Suggestions {
			fmt.Fprintf(w, "  %-*s  %9s (%s)%s\n", width, row.Path, size(row.Bytes), share(row.Bytes, rep.Bytes), alsoBy(row.Path))
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// alsoBy names the transform that drops the field of path too, if any.
func alsoBy(path string) string {
	switch {
	case path == informer.ManagedFields:
		return "; or the StripManagedFields transform"
	case strings.HasPrefix(path, "metadata.annotations["):
		return "; or the DropAnnotations transform"
	}
	return ""
}

// size formats n bytes.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// perObject formats n bytes over objects objects.
func perObject(n int64, objects int) string {
	if objects == 0 {
		return "-"
	}
	return fmt.Sprintf("%d B", n/int64(objects))
}

// share formats part as a percentage of whole.
func share(part, whole int64) string {
	if whole == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}

// writeSVGFile draws reports into the file at path: for each, a bar per
// row (at most rows), its shared part darker.
func writeSVGFile(path string, reports []resourceReport, rows int) error {
	var b strings.Builder
	const (
		width, labelWidth, barWidth, line = 900, 430, 330, 18
	)
	height := 10
	for _, r := range reports {
		height += line * (min(rows, len(r.report.Rows)) + 2)
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	y := 10
	for _, r := range reports {
		rep := r.report
		y += line
		fmt.Fprintf(&b, `<text x="4" y="%d" font-weight="bold">%s: %d objects, %s</text>`+"\n", y, html.EscapeString(r.title()), rep.Objects, size(rep.Bytes))
		var largest int64 = 1
		for _, row := range rep.Rows {
			largest = max(largest, row.Bytes)
		}
		for _, row := range rep.Rows[:min(rows, len(rep.Rows))] {
			y += line
			w := barWidth * float64(row.Bytes) / float64(largest)
			ws := barWidth * float64(row.SharedBytes) / float64(largest)
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, labelWidth-6, y, html.EscapeString(row.Path))
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="#7aa6d6"/>`, labelWidth, y-12, w, line-4)
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="#2f5f94"/>`, labelWidth, y-12, ws, line-4)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s (%s)</text>`+"\n", float64(labelWidth)+w+4, y, size(row.Bytes), share(row.Bytes, rep.Bytes))
		}
		y += line
	}
	b.WriteString("</svg>\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
