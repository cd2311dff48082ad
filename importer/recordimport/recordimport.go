// Package recordimport reads the result files of other tools — vLLM's
// `vllm bench serve --save-result` JSON and LiteLLM's spend logs — as
// crab records, so that crab report and crab export read them as they read
// a run. Each source carries only part of what a crab record holds; what it
// does not carry is named in each record's Unmeasured (cost, quality,
// tokens, the latency of a failure the source gives no duration for:
// shown as "-", never decided on) or left absent (a TTFT of 0), and said
// in Notes, which the report prints beside its decision.
// docs/formats.md has the mapping of every field.
package recordimport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/infile"
	"github.com/crab-testbed/crab/internal/jsonl"
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

// ReadOptions say how to read another tool's files.
type ReadOptions struct {
	// From names the importer (FromVLLM, FromLiteLLM).
	From string
	// PairKey (LiteLLM) is what pairs the requests of two logs, the task
	// id of each record: "" or "request_id" (LiteLLM's own id, without
	// the suffix of a cache hit), a field of the row or of its metadata
	// ("end_user", "metadata.spend_logs_metadata.task"), "tag:PREFIX" (the
	// value after PREFIX of the request tag that starts with it), or
	// "messages" (a hash of the stored prompt). Read by --pair-key.
	PairKey string
	// Map (LiteLLM) overrides where a record field comes from:
	// "tenant=FIELD", "group=FIELD", FIELD written as for PairKey. Read by
	// --map.
	Map []string
}

// Read reads every path with the importer from (vllm or litellm), with
// the default mapping; see ReadOptions.Read.
func Read(paths []string, stdin io.Reader, from string) (*Imported, error) {
	return ReadOptions{From: from}.Read(paths, stdin)
}

// armRecords are the records of one arm, and what checks how they pair.
type armRecords struct {
	arm  string
	recs []records.Record
	// lines are the lines each record came from (nil: line, for all).
	lines []int
	line  int // where the arm's result starts (vLLM --append-result)
	// inputLens, prompts and tokenizer (vLLM) check that position pairs
	// the same prompts.
	inputLens []int
	prompts   []string
	tokenizer string
	// keys (LiteLLM) are the distinct pair keys of the arm.
	keys map[string]bool
	// outputField names where record i's answer came from (vLLM
	// generated_texts[i]); nil when the source carries no answer.
	outputField func(i int) string
}

// Read reads every path with the importer o.From; "-" is stdin, at most
// once. Each file is one arm, named after the file (its base name without
// extension; "stdin" for -), or one per result in a vLLM file of several.
// Files are read whole, regular files only and at most infile.MaxSize; a
// byte order mark is dropped and text that is not UTF-8 refused. Every
// fault is a *records.InputError naming the file, the line or JSON path,
// and the field.
func (o ReadOptions) Read(paths []string, stdin io.Reader) (*Imported, error) {
	var read func(data []byte, name, arm string, o ReadOptions) ([]armRecords, error)
	var notes []string
	switch o.From {
	case FromVLLM:
		read, notes = readVLLM, vllmNotes
		if o.PairKey != "" || len(o.Map) > 0 {
			return nil, &records.InputError{File: "--pair-key", Msg: "--pair-key and --map read LiteLLM spend logs; vLLM results pair by position"}
		}
	case FromLiteLLM:
		read, notes = readLiteLLM, litellmNotes
		if _, err := o.litellmMapping(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("recordimport: unknown source %q", o.From)
	}
	if len(paths) == 0 {
		return nil, &records.InputError{File: "-", Msg: "no input: name a " + o.From + " file, or - for stdin"}
	}
	out := &Imported{Notes: notes}
	arms := map[string]string{}
	usedStdin := false
	var all []armRecords
	var names []string
	for _, p := range paths {
		if p == "-" {
			if usedStdin {
				return nil, &records.InputError{File: "-", Msg: "stdin named more than once"}
			}
			usedStdin = true
		}
		if st, err := os.Stat(p); p != "-" && err == nil && st.IsDir() {
			return nil, &records.InputError{File: p, Msg: "a directory: --from reads result files, not run directories"}
		}
		data, name, err := infile.Read(p, stdin, infile.Options{})
		if err != nil {
			return nil, records.FileError(err)
		}
		arm := armOf(p)
		if msg := records.ArmNameFault(arm); msg != "" {
			return nil, &records.InputError{File: name, Msg: "the file name gives the arm name, which " + strings.TrimPrefix(msg, "holds") + "; rename the file"}
		}
		got, err := read(data, name, arm, o)
		if err != nil {
			return nil, err
		}
		for _, a := range got {
			if prev, dup := arms[a.arm]; dup {
				return nil, &records.InputError{File: name, Msg: fmt.Sprintf("arm %q is also the arm of %s: each file is one arm, named after the file, so rename one", a.arm, prev)}
			}
			arms[a.arm] = name
			if len(a.recs) == 0 {
				return nil, &records.InputError{File: name, Msg: "no records"}
			}
			if err := checkRecords(a, name); err != nil {
				return nil, err
			}
			all, names = append(all, a), append(names, name)
			out.Records = append(out.Records, a.recs...)
		}
	}
	var more []string
	var err error
	switch o.From {
	case FromVLLM:
		more, err = checkVLLMPairing(all, names)
	case FromLiteLLM:
		err = o.checkLiteLLMPairing(all, names)
	}
	if err != nil {
		return nil, err
	}
	out.Notes = append(out.Notes, more...)
	return out, nil
}

// armOf is the arm a file's records belong to: its base name without the
// extension, "stdin" for -.
func armOf(p string) string {
	if p == "-" {
		return "stdin"
	}
	base := filepath.Base(p)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// checkRecords checks every record an importer built as crab's reader
// will when the report reads them back, and that each fits on a line of
// records.jsonl, so that a fault names the file and line it came from.
func checkRecords(a armRecords, name string) error {
	var buf []byte
	for i := range a.recs {
		line := a.line
		if i < len(a.lines) {
			line = a.lines[i]
		}
		if err := records.CheckRecord(&a.recs[i], name, line); err != nil {
			return err
		}
		b, ok := a.recs[i].AppendJSON(buf[:0])
		if !ok {
			var err error
			if b, err = json.Marshal(&a.recs[i]); err != nil {
				return &records.InputError{File: name, Line: line, Msg: err.Error()}
			}
		}
		buf = b
		if !jsonl.Fits(b) {
			field := "request " + a.recs[i].TaskID
			if len(a.recs[i].Output) > len(b)/2 && a.outputField != nil {
				field = a.outputField(i)
			}
			return &records.InputError{File: name, Line: line, Field: field,
				Msg: fmt.Sprintf("a record of %d bytes, over the %d MiB a line of crab's records holds (an answer this long is no chat answer to compare)", len(b), jsonl.MaxLine>>20)}
		}
	}
	return nil
}

// lineAt is the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

// Sniff names the source whose shape the file at path has ("vllm",
// "litellm", "crab"), or "" when it has none of them: for a hint when a
// reader refuses a file another tool wrote. It reads the first 64 KiB of
// a regular file.
func Sniff(path string) string {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, sniffLen)
	n, _ := io.ReadFull(f, head)
	return sniffData(head[:n])
}

// sniffLen is how much of a file's start tells its source.
const sniffLen = 64 << 10

// sniffData names the source whose shape data (a file's start) has.
func sniffData(data []byte) string {
	s := string(jsonl.TrimBOM(data))
	first := strings.TrimLeft(s, " \t\r\n")
	firstLine, _, _ := strings.Cut(first, "\n")
	switch {
	case strings.Contains(s, `"input_lens"`) && (strings.Contains(s, `"ttfts"`) || strings.Contains(s, `"latencies"`)),
		strings.Contains(s, `"ttfts"`) && strings.Contains(s, `"itls"`),
		strings.HasPrefix(first, "{") && strings.Contains(s, `"backend"`) && strings.Contains(s, `"latencies"`):
		return FromVLLM
	case strings.Contains(s, "request_id") && strings.Contains(s, "startTime") && strings.Contains(s, "endTime"),
		strings.HasPrefix(first, "{") && strings.Contains(firstLine, `"data"`) && strings.Contains(s, `"total_pages"`):
		return FromLiteLLM
	case strings.HasPrefix(first, "{") && strings.Contains(firstLine, `"run_id"`) && strings.Contains(firstLine, `"task_id"`) && strings.Contains(firstLine, `"arm"`),
		!strings.HasPrefix(first, "{") && !strings.HasPrefix(first, "[") && strings.Contains(firstLine, "arm") && strings.Contains(firstLine, "task_id") && strings.Contains(firstLine, "latency_ms"):
		return FromCrab
	}
	return ""
}

// wrongFrom is the error for a file of another source than --from names.
func wrongFrom(name, from, is string) error {
	what := map[string]string{FromVLLM: "a vllm bench serve result", FromLiteLLM: "a LiteLLM spend log", FromCrab: "crab's own records"}
	fix := "--from " + is
	if is == FromCrab {
		fix = "no --from (or --from crab)"
	}
	return &records.InputError{File: name, Field: "--from", Msg: fmt.Sprintf("--from %s reads %s, and this file is %s: read it with %s", from, what[from], what[is], fix)}
}
