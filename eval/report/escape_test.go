package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
)

// TestControlCharactersEscaped: an arm name carrying an ANSI escape, a
// carriage return or a bidirectional override is printed escaped in the
// text and Markdown reports, so it cannot recolour the terminal, overwrite
// a line or reorder one; the table keeps its columns.
func TestControlCharactersEscaped(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../fixtures/exercise.csv")
	if err != nil {
		t.Fatal(err)
	}
	hostile := "cand\x1b[31mred\r\u202eb"
	path := filepath.Join(t.TempDir(), "x.csv")
	if err := os.WriteFile(path, bytes.ReplaceAll(raw, []byte("candidate_b"), []byte(hostile)), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := records.ReadSet([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := analysis.Summarize(set, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "md"} {
		var b bytes.Buffer
		if err := WriteReport(&b, s, format); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if strings.ContainsAny(out, "\x1b\r\u202e") {
			t.Errorf("%s: raw control characters in the output:\n%q", format, out)
		}
		if !strings.Contains(out, `cand\x1b[31mred\r\u202eb`) {
			t.Errorf("%s: the escaped name is missing:\n%s", format, out)
		}
	}
	if got := escapeControl("a\tb\nc\x00\u0085"); got != `a\tb`+"\n"+`c\x00\u0085` {
		t.Errorf("escapeControl = %q", got)
	}
}
