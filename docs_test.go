package informer_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
)

// The documentation's Go code is quoted from test files, where it compiles
// and (mostly) runs as Examples. These tests keep the two in step: every
// ```go block of README.md and docs/*.md must appear, line for line, in one
// of docSnippetFiles, and every relative link must lead to a file (and, for a
// #fragment into Markdown, to a heading) that exists.

// docSnippetFiles are the test files the documentation may quote.
var docSnippetFiles = []string{
	"docsnippets_test.go",
	"readme_main_test.go",
	"example_migration_test.go",
	"example_migration_cache_test.go",
	"example_migration_scope_test.go",
	"example_migration_resources_test.go",
	"example_migration_controller_test.go",
	"crcache/example_test.go",
	"example_operations_test.go",
	"example_sharding_test.go",
	"example_fleet_test.go",
}

// docPages returns README.md and the Markdown files under docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, pages...)
}

func TestDocsGoBlocksAreQuotedFromTestFiles(t *testing.T) {
	var sources [][]string
	for _, name := range docSnippetFiles {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("a file the documentation quotes: %v", err)
		}
		sources = append(sources, normalizeCode(string(src)))
	}
	blocksPerPage := map[string]int{}
	for _, page := range docPages(t) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := goBlocks(string(text))
		if err != nil {
			t.Errorf("%s: %v", page, err)
			continue
		}
		blocksPerPage[page] = len(blocks)
		for _, b := range blocks {
			code := normalizeCode(b.code)
			if len(code) == 0 {
				t.Errorf("%s:%d: empty go block", page, b.line)
				continue
			}
			quoted := 0
			for _, src := range sources {
				quoted = max(quoted, quotedPrefix(src, code))
			}
			if quoted < len(code) {
				t.Errorf("%s:%d: this go block is not in any of %s: its first %d non-blank lines are, but not %q; quote the test file again",
					page, b.line, strings.Join(docSnippetFiles, ", "), quoted, code[quoted])
			}
		}
	}
	// Guards against a broken extractor passing everything vacuously.
	for page, min := range map[string]int{"README.md": 1, "docs/migrating-from-client-go.md": 20} {
		if blocksPerPage[filepath.FromSlash(page)] < min {
			t.Errorf("%s has %d go blocks, expected at least %d", page, blocksPerPage[filepath.FromSlash(page)], min)
		}
	}
}

func TestDocsRelativeLinksResolve(t *testing.T) {
	for _, page := range docPages(t) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, link := range relativeLinks(string(text)) {
			target, fragment, _ := strings.Cut(link, "#")
			path := page // a bare #fragment points into the page itself
			if target != "" {
				path = filepath.Join(filepath.Dir(page), filepath.FromSlash(target))
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %q: %v", page, link, err)
				continue
			}
			if fragment == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			targetText, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(headingAnchors(string(targetText)), fragment) {
				t.Errorf("%s: link %q: %s has no heading with anchor %q", page, link, path, fragment)
			}
		}
	}
}

// docBlock is one fenced ```go block of a Markdown page.
type docBlock struct {
	line int // of the opening fence, 1-based
	code string
}

// goBlocks returns the ```go blocks of a Markdown text. Fences may be
// indented (inside list items); blocks in other languages are skipped.
func goBlocks(markdown string) ([]docBlock, error) {
	var blocks []docBlock
	var open *docBlock
	var inOther bool
	var code strings.Builder
	for i, line := range strings.Split(markdown, "\n") {
		fence := strings.TrimSpace(line)
		switch {
		case open != nil && fence == "```":
			open.code = code.String()
			blocks = append(blocks, *open)
			open = nil
			code.Reset()
		case open != nil:
			code.WriteString(line)
			code.WriteByte('\n')
		case inOther:
			inOther = fence != "```"
		case strings.HasPrefix(fence, "```"):
			if strings.TrimSpace(strings.TrimPrefix(fence, "```")) == "go" {
				open = &docBlock{line: i + 1}
			} else {
				inOther = true
			}
		}
	}
	if open != nil {
		return blocks, fmt.Errorf("line %d: go block not closed", open.line)
	}
	if inOther {
		return blocks, errors.New("a code block is not closed")
	}
	return blocks, nil
}

// normalizeCode returns the non-blank lines of code with leading and
// trailing white space removed and inner runs of white space made one space,
// so that indentation and gofmt's alignment do not matter.
func normalizeCode(code string) []string {
	var lines []string
	for _, line := range strings.Split(code, "\n") {
		if fields := strings.Fields(line); len(fields) > 0 {
			lines = append(lines, strings.Join(fields, " "))
		}
	}
	return lines
}

// quotedPrefix returns the length of the longest prefix of run that appears
// as consecutive lines of lines: len(run) when all of run does.
func quotedPrefix(lines, run []string) int {
	longest := 0
	for i := range lines {
		n := 0
		for n < len(run) && i+n < len(lines) && lines[i+n] == run[n] {
			n++
		}
		longest = max(longest, n)
	}
	return longest
}

var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// relativeLinks returns the targets of the Markdown links and images of text
// that point into the repository, outside code blocks and code spans.
func relativeLinks(markdown string) []string {
	var links []string
	inCode := false
	for _, line := range strings.Split(markdown, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		for _, m := range markdownLink.FindAllStringSubmatch(withoutCodeSpans(line), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links = append(links, target)
		}
	}
	return links
}

var codeSpan = regexp.MustCompile("`[^`]*`")

func withoutCodeSpans(line string) string { return codeSpan.ReplaceAllString(line, "") }

// headingAnchors returns the anchors GitHub gives the headings of a Markdown
// text: lower case, punctuation other than '-' and '_' dropped, spaces made
// hyphens. Letters and digits of any script are kept.
func headingAnchors(markdown string) []string {
	var anchors []string
	inCode := false
	for _, line := range strings.Split(markdown, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
		}
		title, ok := strings.CutPrefix(line, "#")
		if inCode || !ok {
			continue
		}
		title = strings.TrimSpace(strings.TrimLeft(title, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		anchors = append(anchors, b.String())
	}
	return anchors
}

func TestGoBlocks(t *testing.T) {
	markdown := "# T\n\n```sh\ngo test\n```\n\n- item\n\n  ```go\n  x := 1\n\n  y := 2\n  ```\n\n```go\nf()\n```\n"
	got, err := goBlocks(markdown)
	if err != nil {
		t.Fatal(err)
	}
	want := []docBlock{{line: 9, code: "  x := 1\n\n  y := 2\n"}, {line: 15, code: "f()\n"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(docBlock{})); diff != "" {
		t.Errorf("goBlocks (-want +got):\n%s", diff)
	}
	if _, err := goBlocks("```go\nf()\n"); err == nil {
		t.Error("goBlocks accepted an unclosed block")
	}
}

func TestNormalizedRuns(t *testing.T) {
	src := normalizeCode("func f() {\n\tx  := 1\n\n\ty := 2\n\tz := 3\n}\n")
	if diff := cmp.Diff([]string{"func f() {", "x := 1", "y := 2", "z := 3", "}"}, src); diff != "" {
		t.Errorf("normalizeCode (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		block string
		want  int
	}{
		{"x := 1\ny := 2", 2},
		{"    x := 1\n\n    y    := 2\n", 2},
		{"x := 1\nz := 3", 1}, // not consecutive
		{"y := 3", 0},
		{"z := 3\n}\n}", 2}, // longer than the rest of the file
	} {
		if got := quotedPrefix(src, normalizeCode(tc.block)); got != tc.want {
			t.Errorf("quotedPrefix(%q) = %d, want %d", tc.block, got, tc.want)
		}
	}
}

func TestHeadingAnchors(t *testing.T) {
	got := headingAnchors("# Migrating from client-go\n\n## 3. Deletions: `DeletedObject[T]`\n```go\n# not a heading\n```\n### Set-up\n")
	want := []string{"migrating-from-client-go", "3-deletions-deletedobjectt", "set-up"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headingAnchors (-want +got):\n%s", diff)
	}
}

// TestDesignFileMapCoversEveryRootFile checks that docs/design.md names
// every non-test Go file of the root package, so that its file map stays
// the place to start reading.
func TestDesignFileMapCoversEveryRootFile(t *testing.T) {
	design, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, name := range regexp.MustCompile(`[A-Za-z0-9_]+\.go\b`).FindAllString(string(design), -1) {
		named[name] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") && !named[f] {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		t.Errorf("docs/design.md does not name these root files (add them to its file map): %v", missing)
	}
}
