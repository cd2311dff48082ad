package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/serve"
)

// The documentation shows real output of crab's commands. Every output block
// whose figures are deterministic is marked with an HTML comment naming the
// command, and this test re-runs the command and fails when the block no
// longer matches, so the docs cannot go stale:
//
//	<!-- doc-test: crab audit --key text | exit 1 | skip hit_p50 hit_p95 -->
//	```
//	$ crab audit --key text
//	...output lines...
//	```
//
// The marker is "crab ARGS", then optional clauses: "exit N" is the expected
// exit code (default 0), "skip COLUMN..." names table columns that carry
// timings and are not compared, "vary WORD..." names lines (by their first
// field) whose figures vary from run to run: such a line need only be
// present. Each non-blank line of the block must appear
// in the command's output (stdout, then stderr), in order; lines are compared
// field by field, so column widths may change. A line "..." stands for lines
// left out, and a first line "$ crab ARGS" must repeat the marker's command.
// Paths under /tmp/ in the command are moved to a fresh temporary directory,
// so a block may show a command that writes a run directory.
// A table's header line is the one holding a skipped column's name; the skip
// applies to the rows below it until the next blank line.

// docFiles are the pages whose marked blocks are checked.
var docFiles = []string{
	"README.md",
	"docs/cache-audit.md",
	"docs/semantic-cache.md",
	"docs/router-tuning.md",
	"docs/contract.md",
	"docs/backends-and-serve.md",
	"docs/statistics.md",
	"docs/formats.md",
	"docs/performance.md",
	"docs/scale.md",
	"docs/workload.md",
	"docs/extending.md",
}

// docBlock is one marked output block.
type docBlock struct {
	file  string
	line  int // line of the marker
	args  []string
	exit  int
	skip  map[string]bool
	vary  map[string]bool
	lines []string
}

const docMarker = "<!-- doc-test:"

// readDocBlocks returns the marked blocks of one Markdown file.
func readDocBlocks(path string) ([]docBlock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks []docBlock
		cur    *docBlock
		inside bool
		n      int
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
		text := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(text, docMarker):
			b, err := parseDocMarker(text)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, n, err)
			}
			b.file, b.line = path, n
			cur = &b
		case cur != nil && !inside:
			if !strings.HasPrefix(text, "```") {
				return nil, fmt.Errorf("%s:%d: want a fenced block right after the doc-test marker", path, n)
			}
			inside = true
		case cur != nil && inside:
			if strings.HasPrefix(text, "```") {
				blocks = append(blocks, *cur)
				cur, inside = nil, false
				continue
			}
			cur.lines = append(cur.lines, text)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: doc-test block not closed", path, cur.line)
	}
	return blocks, nil
}

func parseDocMarker(text string) (docBlock, error) {
	body := strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(text, docMarker)), "-->")
	parts := strings.Split(body, "|")
	b := docBlock{skip: map[string]bool{}, vary: map[string]bool{}}
	b.args = strings.Fields(parts[0])
	if len(b.args) == 0 || b.args[0] != "crab" {
		return b, fmt.Errorf("doc-test marker: want \"crab ARGS\", got %q", parts[0])
	}
	for _, p := range parts[1:] {
		f := strings.Fields(p)
		switch {
		case len(f) == 2 && f[0] == "exit":
			code, err := strconv.Atoi(f[1])
			if err != nil {
				return b, fmt.Errorf("doc-test marker: exit %q", f[1])
			}
			b.exit = code
		case len(f) > 1 && f[0] == "skip":
			for _, c := range f[1:] {
				b.skip[c] = true
			}
		case len(f) > 1 && f[0] == "vary":
			for _, w := range f[1:] {
				b.vary[w] = true
			}
		default:
			return b, fmt.Errorf("doc-test marker: unknown clause %q", p)
		}
	}
	return b, nil
}

// matchDocLines checks that want's lines occur in got's lines in order and
// returns the first line that does not.
func matchDocLines(want, got []string, skip, vary map[string]bool) (string, bool) {
	var skipCols map[int]bool
	g := 0
	for _, w := range want {
		wf := strings.Fields(w)
		if len(wf) == 0 {
			skipCols = nil
			continue
		}
		if w == "..." {
			continue
		}
		cols := skipCols
		if header := skippedColumns(wf, skip); header != nil {
			skipCols, cols = header, nil // a header line is compared whole
		}
		found := false
		for ; g < len(got); g++ {
			gf := strings.Fields(got[g])
			if vary[wf[0]] && len(gf) > 0 && gf[0] == wf[0] || sameFields(wf, gf, cols) {
				found = true
				g++
				break
			}
		}
		if !found {
			return w, false
		}
	}
	return "", true
}

// skippedColumns returns the indices of the skipped columns a header line
// names, or nil when the line is not such a header.
func skippedColumns(fields []string, skip map[string]bool) map[int]bool {
	var cols map[int]bool
	for i, f := range fields {
		if skip[f] {
			if cols == nil {
				cols = map[int]bool{}
			}
			cols[i] = true
		}
	}
	return cols
}

func sameFields(want, got []string, skip map[int]bool) bool {
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		if !skip[i] && want[i] != got[i] {
			return false
		}
	}
	return true
}

// TestDocsOutputBlocks re-runs crab's heaviest commands (tuning sweeps,
// leak proofs) in full, so it runs without the race detector, which slows
// them several times over and adds nothing to what they check: .ci/run runs
// it in a step of its own (go test -run TestDocsOutputBlocks ./internal/cli/), and under
// -race or -short it is skipped.
func TestDocsOutputBlocks(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("doc blocks run without -race and -short: go test -run TestDocsOutputBlocks ./internal/cli/")
	}
	t.Parallel()
	total := 0
	for _, file := range docFiles {
		blocks, err := readDocBlocks(file)
		if err != nil {
			t.Fatal(err)
		}
		total += len(blocks)
		for _, b := range blocks {
			name := fmt.Sprintf("%s:%d", filepath.Base(b.file), b.line)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				want := b.lines
				if len(want) > 0 && strings.HasPrefix(want[0], "$ ") {
					if cmd := strings.Join(b.args, " "); strings.TrimPrefix(want[0], "$ ") != cmd {
						t.Fatalf("%s:%d: block shows %q; the marker runs %q", b.file, b.line, want[0], cmd)
					}
					want = want[1:]
				}
				// Paths under /tmp/ (run directories the command writes)
				// go to a fresh temporary directory, and back in the output.
				tmp := t.TempDir()
				args := make([]string, 0, len(b.args)-1)
				for _, a := range b.args[1:] {
					if strings.HasPrefix(a, "/tmp/") {
						a = filepath.Join(tmp, strings.TrimPrefix(a, "/tmp/"))
					}
					args = append(args, a)
				}
				code, out, errs := crab(t, "", args...)
				out = strings.ReplaceAll(out, tmp+string(filepath.Separator), "/tmp/")
				errs = strings.ReplaceAll(errs, tmp+string(filepath.Separator), "/tmp/")
				if code != b.exit {
					t.Fatalf("%s:%d: %s: exit %d; want %d (stderr %s)", b.file, b.line, strings.Join(b.args, " "), code, b.exit, errs)
				}
				got := strings.Split(out+errs, "\n")
				if line, ok := matchDocLines(want, got, b.skip, b.vary); !ok {
					t.Errorf("%s:%d: %s: the doc shows\n\t%s\nwhich its output no longer has, in that order; output:\n%s",
						b.file, b.line, strings.Join(b.args, " "), line, out+errs)
				}
			})
		}
	}
	if total == 0 {
		t.Fatal("no doc-test blocks found")
	}
}

func TestMatchDocLines(t *testing.T) {
	t.Parallel()
	got := []string{
		"title",
		"arm   n  p50   pass",
		"base  6  130   6/6",
		"cand  6  99.5  5/6",
		"",
		"done",
	}
	cases := []struct {
		name string
		want []string
		skip map[string]bool
		vary map[string]bool
		ok   bool
	}{
		{"exact subset in order", []string{"title", "done"}, nil, nil, true},
		{"column widths ignored", []string{"base 6 130 6/6"}, nil, nil, true},
		{"out of order", []string{"done", "title"}, nil, nil, false},
		{"changed figure", []string{"cand  6  99.5  6/6"}, nil, nil, false},
		{"skipped timing column", []string{"arm n p50 pass", "base 6 1 6/6", "cand 6 2 5/6"}, map[string]bool{"p50": true}, nil, true},
		{"skipped column still checks the rest", []string{"arm n p50 pass", "cand 6 2 6/6"}, map[string]bool{"p50": true}, nil, false},
		{"skip ends at a blank line", []string{"arm n p50 pass", "", "base 6 1 6/6"}, map[string]bool{"p50": true}, nil, false},
		{"elision", []string{"title", "...", "done"}, nil, nil, true},
		{"varying row matched by its first field", []string{"cand 7 1 7/7"}, nil, map[string]bool{"cand": true}, true},
		{"varying row must still be there", []string{"other 7 1 7/7"}, nil, map[string]bool{"other": true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, ok := matchDocLines(tc.want, got, tc.skip, tc.vary); ok != tc.ok {
				t.Errorf("got %v; want %v", ok, tc.ok)
			}
		})
	}
}

// The example serve configuration loads through the same loader as
// crab serve --config, keys included.
func TestExampleServeConfig(t *testing.T) {
	t.Parallel()
	s, err := serve.Load(filepath.Join("examples", "serve", "crab-serve.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Config.Models) != 2 || s.Contract == nil || s.Config.Cache == nil || s.Config.Router == nil {
		t.Errorf("got models %d, contract %v, cache %v, router %v; want two models, a contract, a cache and a router",
			len(s.Config.Models), s.Contract != nil, s.Config.Cache != nil, s.Config.Router != nil)
	}
	for _, m := range s.Config.Models {
		if !strings.HasPrefix(m.BaseURL, "http://127.0.0.1:") {
			t.Errorf("model %s: base_url %q; want crab sim-server on loopback", m.Name, m.BaseURL)
		}
	}
	for key, tenant := range map[string]string{
		"sk-crab-acme-agent":    "acme",
		"sk-crab-globex-admin":  "globex",
		"sk-crab-initech-agent": "initech", // held as key_sha256
	} {
		id, ok := s.Keys.Lookup(key)
		if !ok || id.Tenant != tenant {
			t.Errorf("key %s: got %+v, %v; want tenant %s", key, id, ok, tenant)
		}
	}
}

// The README is a front page: short, and it keeps the exact test command
// that CI looks for.
func TestReadmeFrontPage(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n > 400 {
		t.Errorf("README.md has %d lines; want at most 400 (depth belongs in docs/)", n)
	}
	if !strings.Contains(string(raw), "go vet ./... && go test -race -timeout 8m ./...") {
		t.Error("README.md lost the test command go vet ./... && go test -race -timeout 8m ./...")
	}
	for _, f := range docFiles[1:] {
		if !strings.Contains(string(raw), "("+f+")") {
			t.Errorf("README.md does not link %s", f)
		}
	}
}

// Every relative link in the docs points at a file of the repository.
func TestDocsLinks(t *testing.T) {
	t.Parallel()
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)\s]*)?\)`)
	for _, file := range docFiles {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(raw), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(file), target)); err != nil {
				t.Errorf("%s: link to %s: %v", file, target, err)
			}
		}
	}
}
