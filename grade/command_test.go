//go:build unix

package grade

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// script writes an executable shell script.
func script(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), mode); err != nil {
		t.Fatal(err)
	}
}

func runCommand(t *testing.T, cmd *Command) Result {
	t.Helper()
	g, err := New(Config{Command: &CommandConfig{Run: cmd.Argv()}}, nil, cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g.Grade(context.Background(), Input{Plan: &Plan{}, Task: map[string]any{"id": "t1"}, Content: `{}`, External: true})
}

// TestCommandResolution: a program written with a slash is the file beside
// the experiment, never a same-named program on $PATH; a bare name is
// searched on $PATH; a script argument naming a file beside the
// experiment is that file, wherever crab runs.
func TestCommandResolution(t *testing.T) {
	expDir, pathDir := t.TempDir(), t.TempDir()
	script(t, filepath.Join(expDir, "grade.sh"), `echo '{"pass": true, "reason": "the experiment'"'"'s grader"}'`+"\n", 0o755)
	script(t, filepath.Join(expDir, "bin", "g"), `echo '{"pass": true, "reason": "bin/g"}'`+"\n", 0o755)
	script(t, filepath.Join(pathDir, "grade.sh"), `echo '{"pass": false, "reason": "an impostor on PATH"}'`+"\n", 0o755)
	script(t, filepath.Join(pathDir, "grade-answers"), `echo '{"pass": true, "reason": "on PATH"}'`+"\n", 0o755)
	if err := os.WriteFile(filepath.Join(expDir, "grade.txt"), []byte(`{"pass": true, "reason": "script argument"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", pathDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	elsewhere := t.TempDir()
	t.Chdir(elsewhere) // crab runs from another folder than the experiment's

	tests := []struct {
		name   string
		run    []string
		dir    string
		reason string
	}{
		{name: "dot slash beside the experiment", run: []string{"./grade.sh"}, dir: expDir, reason: "the experiment's grader"},
		{name: "dot slash with the experiment in the working directory", run: []string{"./grade.sh"}, dir: ".", reason: "the experiment's grader"},
		{name: "subfolder path", run: []string{"bin/g"}, dir: expDir, reason: "bin/g"},
		{name: "bare name on PATH", run: []string{"grade-answers"}, dir: expDir, reason: "on PATH"},
		{name: "script argument", run: []string{"cat", "grade.txt"}, dir: expDir, reason: "script argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.dir
			if dir == "." {
				t.Chdir(expDir)
			}
			cmd := NewCommand(CommandConfig{Run: tt.run, Timeout: 30 * time.Second}, dir)
			if err := cmd.Check(); err != nil {
				t.Fatalf("Check: %v", err)
			}
			res := runCommand(t, cmd)
			if res.Error != "" || !res.Correct || res.Reason != tt.reason {
				t.Errorf("got correct %v reason %q error %q; want true %q", res.Correct, res.Reason, res.Error, tt.reason)
			}
			if dir == "." {
				t.Chdir(elsewhere)
			}
		})
	}
}

// TestCommandCheck: a grader that cannot be run is found before any
// answer is graded, with the reason.
func TestCommandCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script(t, filepath.Join(dir, "noexec.sh"), "exit 0\n", 0o644)
	if err := os.Mkdir(filepath.Join(dir, "folder"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		run  string
		want string
	}{
		{run: "./missing.py", want: "no such file or directory"},
		{run: "./noexec.sh", want: "is not executable: chmod +x it, or run it through its interpreter"},
		{run: "./folder", want: "is not a file"},
		{run: "crab-no-such-grader", want: `"crab-no-such-grader" is not on $PATH`},
	}
	for _, tt := range tests {
		err := NewCommand(CommandConfig{Run: []string{tt.run}}, dir).Check()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Check() = %v; want an error containing %q", tt.run, err, tt.want)
		}
	}
}

// TestCommandIdentity: editing a grading script changes the grader's
// identity, so tables built with the old one are not reused.
func TestCommandIdentity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script(t, filepath.Join(dir, "grade.sh"), "echo v1\n", 0o755)
	if err := os.WriteFile(filepath.Join(dir, "grade.py"), []byte("print(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := NewCommand(CommandConfig{Run: []string{"./grade.sh"}}, dir)
	arg := NewCommand(CommandConfig{Run: []string{"sh", "grade.py"}}, dir)
	before, beforeArg := prog.Identity(), arg.Identity()
	script(t, filepath.Join(dir, "grade.sh"), "echo v2\n", 0o755)
	if err := os.WriteFile(filepath.Join(dir, "grade.py"), []byte("print(2)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if prog.Identity() == before || arg.Identity() == beforeArg {
		t.Error("the identity did not change when the grading script did")
	}
}
