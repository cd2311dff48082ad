package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// markdownFiles lists every markdown file of the repository (relative to
// root), leaving out vendored trees, test data and the run directories
// crab writes (runs/, whose report.md is output, not documentation).
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor" || name == "testdata" || name == "runs") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(out, "README.md") {
		t.Fatalf("no README.md among the markdown files %v", out)
	}
	return out
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	mdLink     = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	heading    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// prose yields the lines of a markdown file outside fenced code blocks,
// with inline code spans blanked (a link shown as code is no link), and
// their 1-based line numbers.
func prose(text string) (lines []string, numbers []int) {
	in := false
	for i, l := range strings.Split(text, "\n") {
		if fence.MatchString(l) {
			in = !in
			continue
		}
		if in {
			continue
		}
		lines = append(lines, l)
		numbers = append(numbers, i+1)
	}
	return lines, numbers
}

// slug is a heading's anchor as GitHub makes it: markdown and
// punctuation dropped, lower case, spaces to hyphens.
func slug(h string) string {
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1") // links keep their text
	h = regexp.MustCompile(`<[^>]+>`).ReplaceAllString(h, "")                 // inline HTML
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// anchors is the set of anchors of a markdown file: its headings' slugs
// (a repeated one numbered -1, -2, … as GitHub does) and its HTML anchors.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines, _ := prose(text)
	for _, l := range lines {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func TestSlug(t *testing.T) {
	t.Parallel()
	for h, want := range map[string]string{
		"Arms share the schedule, each under its own load":            "arms-share-the-schedule-each-under-its-own-load",
		"Graders: the `grade` section":                                "graders-the-grade-section",
		"`crab sim-server`: the simulated models over HTTP":           "crab-sim-server-the-simulated-models-over-http",
		"Quality when outcomes vary: rule margin, the noise floor, α": "quality-when-outcomes-vary-rule-margin-the-noise-floor-α",
		"The A/A acid test":                                           "the-aa-acid-test",
		"Real output (embedded task set, default experiment)":         "real-output-embedded-task-set-default-experiment",
		"A [linked](x.md) heading_with_underscores":                   "a-linked-heading_with_underscores",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
	a := anchors("# Top\n## Same\n```\n# not a heading\n```\n## Same\n<a name=\"here\"></a>\n")
	for _, want := range []string{"top", "same", "same-1", "here"} {
		if !a[want] {
			t.Errorf("anchors: no %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("anchors: a line in a code block was taken for a heading")
	}
}

// Every relative link of every markdown file resolves to a file or
// folder of the repository, and every #anchor to a heading of the file
// it names (or of the same file).
func TestDocsLinksAndAnchors(t *testing.T) {
	t.Parallel()
	files := markdownFiles(t)
	texts := map[string]string{}
	for _, f := range files {
		texts[f] = read(t, f)
	}
	anchorsOf := map[string]map[string]bool{}
	links := 0
	for _, f := range files {
		lines, numbers := prose(texts[f])
		for i, l := range lines {
			l = codeSpan.ReplaceAllString(l, "")
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				where := fmt.Sprintf("%s:%d", f, numbers[i])
				path, anchor, _ := strings.Cut(target, "#")
				dest := f
				if path != "" {
					dest = filepath.ToSlash(filepath.Join(filepath.Dir(f), path))
					if strings.HasPrefix(dest, "../") {
						t.Errorf("%s: link %s leaves the repository", where, target)
						continue
					}
					if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
						t.Errorf("%s: link %s: no file %s", where, target, dest)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				if anchorsOf[dest] == nil {
					text, ok := texts[dest]
					if !ok {
						text = read(t, dest)
					}
					anchorsOf[dest] = anchors(text)
				}
				if !anchorsOf[dest][anchor] {
					t.Errorf("%s: link %s: %s has no heading with anchor #%s", where, target, dest, anchor)
				}
			}
		}
	}
	if links == 0 {
		t.Fatal("found no relative link in any markdown file: the link pattern is broken")
	}
}
