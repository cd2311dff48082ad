package eval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/fixtures"
)

// TestLoadSetupChecksGrader: a command grader that cannot be run, and a
// proof field the contract lacks, are bad input naming the experiment's
// file, line and field, found before any request is sent.
func TestLoadSetupChecksGrader(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "noexec.sh"), []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const head = `name: g
tasks: embedded:tasks.jsonl
contract: embedded:triage.schema.json
time_scale: 0
arrival: {pattern: burst}
models:
  - {name: large, kind: large}
arms:
  - {name: baseline, model: large}
`
	tests := []struct {
		name, tail string
		line       int
		field      string
		msg        string
	}{
		{name: "missing program", tail: "grade:\n  command:\n    run: [./grade.py]\n", line: 12, field: "grade.command.run", msg: "no such file"},
		{name: "not executable", tail: "grade:\n  command:\n    run: [./noexec.sh]\n", line: 12, field: "grade.command.run", msg: "not executable"},
		{name: "not on PATH", tail: "grade:\n  command: {run: [crab-no-such-grader]}\n", line: 11, field: "grade.command.run", msg: "not on $PATH"},
		{name: "proof field the contract lacks", tail: "proof:\n  decide: [category, priority]\n", line: 11, field: "proof.decide[1]", msg: `"priority": the contract has no field priority`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".yaml")
			if err := os.WriteFile(path, []byte(head+tt.tail), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadSetup(path, fixtures.FS)
			var ie *records.InputError
			if !errors.As(err, &ie) || ie.File != path || ie.Line != tt.line || ie.Field != tt.field || !strings.Contains(ie.Msg, tt.msg) {
				t.Errorf("got %v; want %s:%d field %q containing %q", err, path, tt.line, tt.field, tt.msg)
			}
		})
	}
}
