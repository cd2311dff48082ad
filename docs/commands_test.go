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
)

// goTestCommands finds the `go test` commands of a markdown file, in
// inline code (which may wrap) and in code blocks, with their lines.
func goTestCommands(text string) (cmds []string, lines []int) {
	for _, m := range regexp.MustCompile("(?s)```.*?```|`[^`]+`").FindAllStringIndex(text, -1) {
		span := text[m[0]:m[1]]
		for _, c := range regexp.MustCompile(`go test\b[^\n#;&|]*(?:\|[^\n#;&]*)?`).FindAllStringIndex(span, -1) {
			cmd := span[c[0]:c[1]]
			if !strings.HasPrefix(span, "```") {
				cmd = strings.Join(strings.Fields(strings.Trim(span[c[0]:], "`")), " ")
			}
			cmds = append(cmds, cmd)
			lines = append(lines, lineOf(text, m[0]+c[0]))
		}
	}
	return cmds, lines
}

// testFuncs lists the test, benchmark, example and fuzz functions of the
// packages a go test package pattern names.
func testFuncs(pattern string) ([]string, error) {
	dir, recursive := strings.CutSuffix(pattern, "/...")
	dir = filepath.Join(root, filepath.FromSlash(dir))
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Example|Fuzz)\w*)\(`)
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && (!recursive || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, "_test.go") {
			raw, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range decl.FindAllStringSubmatch(string(raw), -1) {
				names = append(names, m[1])
			}
		}
		return nil
	})
	return names, err
}

// Every `go test` command the docs show names packages that exist and a
// -run or -bench pattern each of whose alternatives selects a test of
// them: a test renamed or moved to another package fails here, not in a
// reader's terminal.
func TestDocsTestCommands(t *testing.T) {
	t.Parallel()
	token := regexp.MustCompile(`'[^']*'|"[^"]*"|\S+`)
	valued := map[string]bool{"-run": true, "-bench": true, "-count": true, "-timeout": true, "-benchtime": true,
		"-tags": true, "-cpu": true, "-p": true, "-parallel": true, "-o": true, "-coverprofile": true, "-skip": true}
	checked := 0
	for _, file := range markdownFiles(t) {
		cmds, lines := goTestCommands(read(t, file))
		for i, cmd := range cmds {
			where := fmt.Sprintf("%s:%d", file, lines[i])
			args := token.FindAllString(strings.TrimPrefix(cmd, "go test"), -1)
			var pkgs, patterns []string
			for k := 0; k < len(args); k++ {
				a := args[k]
				flag, value, hasValue := strings.Cut(a, "=")
				switch {
				case strings.HasPrefix(a, "-") && valued[flag]:
					if !hasValue {
						if k+1 >= len(args) || strings.HasPrefix(args[k+1], "-") {
							break // shown without its value, as in prose
						}
						k++
						value = args[k]
					}
					if flag == "-run" || flag == "-bench" {
						patterns = append(patterns, strings.Trim(value, `'"`))
					}
				case a == "." || strings.HasPrefix(a, "./"):
					pkgs = append(pkgs, a)
				}
			}
			if len(pkgs) == 0 {
				pkgs = []string{"."}
			}
			var funcs []string
			for _, p := range pkgs {
				names, err := testFuncs(p)
				if err != nil {
					t.Errorf("%s: %s: package %s: %v", where, cmd, p, err)
				}
				funcs = append(funcs, names...)
			}
			for _, pat := range patterns {
				if pat == "." || pat == "^$" || pat == "" || pat == "..." { // "...": a placeholder in prose
					continue
				}
				// go test matches the first /-separated level against the
				// top-level functions; each |-alternative must select one.
				for _, alt := range splitTop(splitTop(pat, '/')[0], '|') {
					re, err := regexp.Compile(alt)
					if err != nil {
						t.Errorf("%s: %s: pattern %q: %v", where, cmd, alt, err)
						continue
					}
					checked++
					if !slices.ContainsFunc(funcs, re.MatchString) {
						t.Errorf("%s: %s: %q selects no test of %s", where, cmd, alt, strings.Join(pkgs, " "))
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no go test -run command in the docs: the command pattern is broken")
	}
}

// splitTop splits a pattern at sep outside parentheses and brackets.
func splitTop(s string, sep byte) []string {
	var out []string
	depth, last := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case sep:
			if depth == 0 {
				out = append(out, s[last:i])
				last = i + 1
			}
		}
	}
	return append(out, s[last:])
}
