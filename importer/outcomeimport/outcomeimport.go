// Package outcomeimport turns an outcome table — one row per task and
// model saying whether the model got the task right, and perhaps its
// answer, latency, tokens and cost, as RouteLLM and RouterBench publish —
// into a crab task file and a recording that backend replay answers from.
//
// A mapping names the column of each field, in the style of crab tasks
// import (model=llm, correct=is_correct, text=prompt, id=qid); a column
// named like a field maps to it by default, and every other column is an
// error, so a misspelt mapping is never silently dropped. Where a row has
// no answer, one is synthesised from its outcome and the contract: the
// task's expected answer when the model was right, a valid answer that
// differs on every expected field when it was wrong (tasks without an
// expected answer get one synthesised too). The recording's header says
// so, and so does every report of a run on it.
package outcomeimport

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/importer/taskimport"
	"github.com/crab-testbed/crab/internal/infile"
	"github.com/crab-testbed/crab/model/replay"
)

// Outcome fields a mapping may name besides the task fields of crab tasks
// import (id, text, tenant, ..., expected.FIELD).
var outcomeFields = []string{"model", "correct", "pass", "answer", "latency_ms", "ttft_ms", "tokens_in", "tokens_out", "cost"}

// Defaults for the task fields every task needs, when no column or --set
// gives them: an outcome table is one tenant's public benchmark.
var defaultSet = map[string]string{"tenant": "public", "permission": "viewer", "lang": "en", "doc_version": "v1"}

// Options configure an import.
type Options struct {
	// Map is FIELD=COLUMN items: outcome fields (model, correct or pass,
	// answer, latency_ms, ttft_ms, tokens_in, tokens_out, cost) and task
	// fields (id, text, group, expected.FIELD, ...).
	Map []string
	// Set gives task fields no column holds (tenant=acme).
	Set map[string]string
	// Contract is the contract the answers must meet; Raw its bytes.
	Contract *contract.Contract
	Raw      []byte
	// Origin is written into the recording's header: where the table
	// comes from and its licence.
	Origin string
}

// Result is an import: the tasks (in table order) and the recording.
type Result struct {
	Tasks     []eval.Task
	TasksRaw  []byte // the task file
	Recording []byte // the recording file
	Models    []string
	Calls     int
	// Synthesised counts the calls whose answer was synthesised from
	// their outcome; Estimated lists what was estimated (tokens).
	Synthesised int
	Estimated   []string
}

// row is one outcome row.
type row struct {
	line    int
	task    string
	model   string
	correct bool
	answer  string
	hasAns  bool
	nums    map[string]float64
}

// Import reads the table in raw (CSV with a header row; name for errors)
// and builds the tasks and the recording. Bad input is an
// *records.InputError naming the file, line and column; nothing is returned
// then.
func Import(raw []byte, name string, o Options) (*Result, error) {
	raw, err := infile.Clean(raw, name, infile.Options{MaxLine: infile.MaxLine})
	if err != nil {
		return nil, records.FileError(err)
	}
	taskMap, outMap, err := splitMap(o.Map)
	if err != nil {
		return nil, &records.InputError{File: name, Msg: err.Error()}
	}
	cr := csv.NewReader(bytes.NewReader(raw))
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, &records.InputError{File: name, Line: 1, Msg: "want a CSV header row: " + err.Error()}
	}
	col, err := resolveColumns(header, name, &taskMap, outMap)
	if err != nil {
		return nil, err
	}
	if _, ok := col["model"]; !ok {
		return nil, &records.InputError{File: name, Line: 1, Field: "model", Msg: "no model column: map one (--map model=COLUMN)"}
	}
	_, hasCorrect := col["correct"]
	_, hasPass := col["pass"]
	if hasCorrect == hasPass {
		return nil, &records.InputError{File: name, Line: 1, Field: "correct", Msg: "map exactly one of correct and pass to a column"}
	}
	tm, err := taskimport.ParseMap(taskMap)
	if err != nil {
		return nil, &records.InputError{File: name, Line: 1, Msg: err.Error()}
	}
	set := map[string]string{}
	for k, v := range defaultSet {
		if !slices.ContainsFunc(tm, func(m taskimport.Mapping) bool { return m.Field == k }) {
			set[k] = v
		}
	}
	for k, v := range o.Set {
		set[k] = v
	}
	tasks, err := taskimport.Import(bytes.NewReader(raw), name, taskimport.Options{Map: tm, Set: set, Contract: o.Contract, RepeatedIDs: true})
	if err != nil {
		return nil, err
	}
	idCol := -1
	for _, m := range tm {
		if m.Field == "id" {
			idCol = slices.Index(header, m.Column)
		}
	}
	if idCol < 0 {
		return nil, &records.InputError{File: name, Line: 1, Field: "id", Msg: "no task id column: map one (--map id=COLUMN); an outcome table has a row per task and model"}
	}
	rows, err := readRows(cr, name, col, outMap, idCol, hasCorrect)
	if err != nil {
		return nil, err
	}
	return build(name, tasks, rows, outMap, o)
}

// splitMap sorts FIELD=COLUMN items into task fields and outcome fields.
func splitMap(items []string) (task []string, out map[string]string, err error) {
	out = map[string]string{}
	pairs, err := taskimport.MapPairs(items)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range pairs {
		f, c := p[0], p[1]
		if slices.Contains(outcomeFields, f) {
			if _, dup := out[f]; dup {
				return nil, nil, fmt.Errorf("--map: field %s mapped twice", f)
			}
			out[f] = c
			continue
		}
		task = append(task, f+"="+c)
	}
	return task, out, nil
}

// taskFieldNames are the task fields a column maps to by its name alone.
var taskFieldNames = []string{"id", "text", "tenant", "user", "permission", "lang", "doc_version", "group", "difficulty"}

// resolveColumns maps every header column to a field: by the mapping, or
// by its own name (task_id maps to id); any other column is an error.
// It adds the task columns mapped by name to taskMap.
func resolveColumns(header []string, name string, taskMap *[]string, outMap map[string]string) (map[string]int, error) {
	mappedCols := map[string]bool{}
	for _, c := range outMap {
		mappedCols[c] = true
	}
	taskFieldsMapped := map[string]bool{}
	for _, it := range *taskMap {
		f, c, _ := strings.Cut(it, "=")
		mappedCols[c] = true
		taskFieldsMapped[f] = true
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		header[i] = h
		for f, c := range outMap {
			if c == h {
				col[f] = i
			}
		}
		switch {
		case mappedCols[h]:
		case slices.Contains(outcomeFields, h) && outMap[h] == "":
			outMap[h] = h
			col[h] = i
		case (slices.Contains(taskFieldNames, h) || h == "task_id" || strings.HasPrefix(h, "expected.")) && !taskFieldsMapped[fieldOf(h)]:
			*taskMap = append(*taskMap, fieldOf(h)+"="+h)
			taskFieldsMapped[fieldOf(h)] = true
		default:
			return nil, &records.InputError{File: name, Line: 1, Field: h,
				Msg: fmt.Sprintf("unknown column: map it to a field (--map FIELD=%s; fields %s, id, text, group, expected.NAME, ...) or drop it", h, strings.Join(outcomeFields, ", "))}
		}
	}
	for f, c := range outMap {
		if _, ok := col[f]; !ok {
			return nil, &records.InputError{File: name, Line: 1, Field: c, Msg: fmt.Sprintf("no such column (mapped to %s; the header has %s)", f, strings.Join(header, ", "))}
		}
	}
	return col, nil
}

func fieldOf(column string) string {
	if column == "task_id" {
		return "id"
	}
	return column
}

// readRows reads the outcome fields of every data row.
func readRows(cr *csv.Reader, name string, col map[string]int, outMap map[string]string, idCol int, hasCorrect bool) ([]row, error) {
	var rows []row
	for n := 1; ; n++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, &records.InputError{File: name, Msg: "CSV: " + err.Error()}
		}
		line, _ := cr.FieldPos(0)
		cellOf := func(f string) (string, bool) {
			i, ok := col[f]
			if !ok || i >= len(rec) {
				return "", false
			}
			return strings.TrimSpace(rec[i]), true
		}
		r := row{line: line, nums: map[string]float64{}}
		if idCol < len(rec) {
			r.task = strings.TrimSpace(rec[idCol])
		}
		r.model, _ = cellOf("model")
		if r.model == "" {
			return nil, &records.InputError{File: name, Line: line, Field: outMap["model"], Msg: "model: required and empty"}
		}
		if msg := records.ArmNameFault(r.model); msg != "" {
			return nil, &records.InputError{File: name, Line: line, Field: outMap["model"], Msg: "model: " + msg}
		}
		f := "pass"
		if hasCorrect {
			f = "correct"
		}
		v, _ := cellOf(f)
		b, ok := parseBool(v)
		if !ok {
			return nil, &records.InputError{File: name, Line: line, Field: outMap[f], Msg: fmt.Sprintf("%s: want true or false (or 1/0, yes/no), got %q", f, v)}
		}
		r.correct = b
		if i, ok := col["answer"]; ok && i < len(rec) && rec[i] != "" {
			r.answer, r.hasAns = rec[i], true
		}
		for _, nf := range []string{"latency_ms", "ttft_ms", "tokens_in", "tokens_out", "cost"} {
			s, ok := cellOf(nf)
			if !ok || s == "" {
				continue
			}
			x, err := strconv.ParseFloat(s, 64)
			if err != nil || x < 0 {
				return nil, &records.InputError{File: name, Line: line, Field: outMap[nf], Msg: fmt.Sprintf("%s: want a number, 0 or more, got %q", nf, s)}
			}
			r.nums[nf] = x
		}
		rows = append(rows, r)
	}
}

func parseBool(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "true", "1", "yes", "t":
		return true, true
	case "false", "0", "no", "f":
		return false, true
	}
	return false, false
}

// marshalTasks writes the task file.
func marshalTasks(tasks []eval.Task) ([]byte, error) {
	var buf bytes.Buffer
	if err := taskimport.Write(&buf, tasks); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// marshalRecording writes the header and the entries.
func marshalRecording(h replay.Header, entries []replay.Entry) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h); err != nil {
		return nil, err
	}
	for i := range entries {
		if err := enc.Encode(&entries[i]); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}
