// Package recordimport reads the result files of other tools — vLLM's
// `vllm bench serve --save-result` JSON and LiteLLM's spend logs — as
// crab records, so that crab report and crab export read them as they read
// a run. Each source carries only part of what a crab record holds; what it
// does not carry is named in each record's Unmeasured (cost, quality,
// tokens: shown as "-", never decided on) or left absent (a TTFT of 0),
// and said in Notes, which the report prints beside its decision.
// docs/formats.md has the mapping of every field.
package recordimport

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/crab-testbed/crab/eval/records"
)

// Sources crab reads records from: its own records (records.jsonl,
// interchange CSV, a run directory) and the importers of this package.
const (
	FromCrab    = "crab"
	FromVLLM    = "vllm"
	FromLiteLLM = "litellm"
)

// Sources lists the names --from takes, crab first.
func Sources() []string { return []string{FromCrab, FromVLLM, FromLiteLLM} }

// Known reports whether from names a source ("" is crab).
func Known(from string) bool {
	switch from {
	case "", FromCrab, FromVLLM, FromLiteLLM:
		return true
	}
	return false
}

// Imported is what an importer read: the records, in file order, and the
// notes saying what the source does not carry.
type Imported struct {
	Records []records.Record
	Notes   []string
}

// Read reads every path with the importer from (vllm or litellm); "-" is
// stdin, at most once. Each file is one arm, named after the file (its base
// name without extension; "stdin" for -). Every fault is a
// *records.InputError naming the file, the line or JSON path, and the field.
func Read(paths []string, stdin io.Reader, from string) (*Imported, error) {
	var read func(data []byte, name, arm string) ([]records.Record, error)
	var notes []string
	switch from {
	case FromVLLM:
		read, notes = readVLLM, vllmNotes
	case FromLiteLLM:
		read, notes = readLiteLLM, litellmNotes
	default:
		return nil, fmt.Errorf("recordimport: unknown source %q", from)
	}
	if len(paths) == 0 {
		return nil, &records.InputError{File: "-", Msg: "no input: name a " + from + " file, or - for stdin"}
	}
	out := &Imported{Notes: notes}
	arms := map[string]string{}
	usedStdin := false
	for _, p := range paths {
		data, name, arm, err := load(p, stdin, &usedStdin)
		if err != nil {
			return nil, err
		}
		if prev, dup := arms[arm]; dup {
			return nil, &records.InputError{File: name, Msg: fmt.Sprintf("arm %q is also the arm of %s: each file is one arm, named after the file, so rename one", arm, prev)}
		}
		arms[arm] = name
		recs, err := read(data, name, arm)
		if err != nil {
			return nil, err
		}
		if len(recs) == 0 {
			return nil, &records.InputError{File: name, Msg: "no records"}
		}
		out.Records = append(out.Records, recs...)
	}
	return out, nil
}

// load reads one input whole, returning the name messages use and the arm
// its records belong to.
func load(p string, stdin io.Reader, usedStdin *bool) (data []byte, name, arm string, err error) {
	if p == "-" {
		if *usedStdin {
			return nil, "-", "", &records.InputError{File: "-", Msg: "stdin named more than once"}
		}
		*usedStdin = true
		if stdin == nil {
			return nil, "<stdin>", "", &records.InputError{File: "<stdin>", Msg: "no standard input to read"}
		}
		data, err = io.ReadAll(stdin)
		if err != nil {
			return nil, "<stdin>", "", &records.InputError{File: "<stdin>", Msg: "read error: " + err.Error()}
		}
		return data, "<stdin>", "stdin", nil
	}
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return nil, p, "", &records.InputError{File: p, Msg: "a directory: --from reads result files, not run directories"}
	}
	data, err = os.ReadFile(p)
	if err != nil {
		msg := err.Error()
		if pe, ok := err.(*os.PathError); ok {
			msg = pe.Err.Error()
		}
		return nil, p, "", &records.InputError{File: p, Msg: "cannot read: " + msg}
	}
	base := filepath.Base(p)
	return data, p, strings.TrimSuffix(base, filepath.Ext(base)), nil
}

// lineAt is the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	n := 1
	for _, c := range data[:off] {
		if c == '\n' {
			n++
		}
	}
	return n
}

// Sniff names the importer whose shape the file at path has ("vllm",
// "litellm"), or "" when it has neither: for a hint when crab's own
// reader refuses a file another tool wrote. It reads the first 64 KiB.
func Sniff(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, head)
	s := string(head[:n])
	switch {
	case strings.Contains(s, `"ttfts"`) && strings.Contains(s, `"input_lens"`):
		return FromVLLM
	case strings.Contains(s, "request_id") && strings.Contains(s, "startTime") && strings.Contains(s, "endTime"):
		return FromLiteLLM
	}
	return ""
}
