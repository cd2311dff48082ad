// Package taskimport turns an export of another system — a CSV file with a
// header row, or JSONL objects — into crab tasks: a mapping names the
// column each task field comes from (text=body, id=ticket_id,
// expected.priority=prio), and labels are coerced to the contract's types
// ("false" → false, "3" → 3) and checked against it, so the task file
// written is one crab loads as it is.
package taskimport

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/infile"
	"github.com/crab-testbed/crab/internal/jsonl"
)

// Fields a mapping may name besides expected.FIELD.
var taskFields = []string{"id", "text", "tenant", "user", "permission", "lang", "doc_version", "group", "difficulty"}

// required are the task fields every task needs: from a column or a
// constant (Options.Set).
var required = []string{"text", "tenant", "permission", "lang", "doc_version"}

// Mapping is one FIELD=COLUMN pair.
type Mapping struct {
	Field   string // a task field, or expected/POINTER
	Pointer string // for expected fields: the JSON pointer into the answer
	Column  string
}

// MapPairs splits --map items ("FIELD=COLUMN", several to an item when
// separated by commas) into their field and column, in order.
func MapPairs(items []string) ([][2]string, error) {
	var out [][2]string
	for _, it := range items {
		for _, part := range strings.Split(it, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			f, col, ok := strings.Cut(part, "=")
			f, col = strings.TrimSpace(f), strings.TrimSpace(col)
			if !ok || f == "" || col == "" {
				return nil, fmt.Errorf("--map %q: want FIELD=COLUMN", part)
			}
			out = append(out, [2]string{f, col})
		}
	}
	return out, nil
}

// ParseMap reads "FIELD=COLUMN" items. expected.a.b and expected/a/b both
// map the expected answer's field /a/b.
func ParseMap(items []string) ([]Mapping, error) {
	pairs, err := MapPairs(items)
	if err != nil {
		return nil, err
	}
	var out []Mapping
	seen := map[string]bool{}
	for _, p := range pairs {
		f, col, part := p[0], p[1], p[0]+"="+p[1]
		m := Mapping{Field: f, Column: col}
		switch {
		case strings.HasPrefix(f, "expected."):
			m.Pointer = "/" + strings.ReplaceAll(strings.TrimPrefix(f, "expected."), ".", "/")
		case strings.HasPrefix(f, "expected/"):
			m.Pointer = strings.TrimPrefix(f, "expected")
		case !slices.Contains(taskFields, f):
			return nil, fmt.Errorf("--map %q: unknown field %q (want %s, or expected.FIELD)", part, f, strings.Join(taskFields, ", "))
		}
		key := f
		if m.Pointer != "" {
			key = "expected" + m.Pointer
			m.Field = key
		}
		if seen[key] {
			return nil, fmt.Errorf("--map: field %s mapped twice", key)
		}
		seen[key] = true
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, errors.New("--map: no FIELD=COLUMN given")
	}
	return out, nil
}

// Options configure an import.
type Options struct {
	Map []Mapping
	// Set gives task fields that no column holds a constant value
	// (tenant=acme), e.g. for a single-tenant export.
	Set map[string]string
	// Contract, when set, gives the expected fields' types and checks
	// their values.
	Contract *contract.Contract
	// RepeatedIDs reads a table with several rows per task (one per
	// model, as an outcome table has): a row whose id was seen is skipped
	// (its other cells may be empty), instead of being refused as a
	// duplicate.
	RepeatedIDs bool
}

// Import reads the export in r (name for errors; CSV unless the first
// non-blank byte is '{') and returns its tasks. A row the tasks cannot be
// built from is an *records.InputError naming the line and the column; a
// task without an id column gets its row number (r0001, r0002, ...).
func Import(r io.Reader, name string, o Options) ([]eval.Task, error) {
	for f := range o.Set {
		if !slices.Contains(taskFields, f) {
			return nil, &records.InputError{File: name, Field: f, Msg: fmt.Sprintf("--set: unknown field (want %s)", strings.Join(taskFields, ", "))}
		}
	}
	fields := map[string]*contract.Field{}
	for _, m := range o.Map {
		if m.Pointer == "" {
			if _, dup := o.Set[m.Field]; dup {
				return nil, &records.InputError{File: name, Field: m.Field, Msg: "both mapped to a column and --set"}
			}
			continue
		}
		if o.Contract != nil {
			f, err := o.Contract.Field(m.Pointer)
			if err != nil {
				return nil, &records.InputError{File: o.Contract.Name(), Field: m.Field, Msg: strings.TrimPrefix(err.Error(), contract.ErrNoField.Error()+": ")}
			}
			fields[m.Pointer] = f
		}
	}
	mapped := func(f string) bool {
		return slices.ContainsFunc(o.Map, func(m Mapping) bool { return m.Field == f }) || o.Set[f] != ""
	}
	for _, f := range required {
		if !mapped(f) {
			return nil, &records.InputError{File: name, Field: f, Msg: "required: map a column to it (--map " + f + "=COLUMN) or give it a value (--set " + f + "=VALUE)"}
		}
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, &records.InputError{File: name, Msg: "read error: " + err.Error()}
	}
	if raw, err = infile.Clean(raw, name, infile.Options{MaxLine: infile.MaxLine}); err != nil {
		return nil, records.FileError(err)
	}
	br := bufio.NewReader(bytes.NewReader(raw))
	im := &importer{name: name, o: o, fields: fields, seen: map[string]int{}}
	if first := firstByte(br); first == '{' {
		err = im.jsonl(br)
	} else {
		err = im.csv(br)
	}
	if err != nil {
		return nil, err
	}
	if len(im.tasks) == 0 {
		return nil, &records.InputError{File: name, Msg: "no rows"}
	}
	return im.tasks, nil
}

func firstByte(br *bufio.Reader) byte {
	for i := 1; ; i++ {
		b, err := br.Peek(i)
		if err != nil || len(b) < i {
			return 0
		}
		if c := b[i-1]; c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return c
		}
	}
}

type importer struct {
	name   string
	o      Options
	fields map[string]*contract.Field
	seen   map[string]int
	tasks  []eval.Task
}

// cell is one value of a row: text from a CSV cell, or any JSON value of
// a JSONL object.
type cell struct {
	v       any // string, or a decoded JSON value; nil when absent
	present bool
}

func (im *importer) csv(r io.Reader) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err == io.EOF {
		return &records.InputError{File: im.name, Msg: "no rows"}
	}
	if err != nil {
		return im.csvErr(err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	headerLine, _ := cr.FieldPos(0)
	for _, m := range im.o.Map {
		if _, ok := col[m.Column]; !ok {
			return &records.InputError{File: im.name, Line: headerLine, Field: m.Column, Msg: fmt.Sprintf("no such column (mapped to %s; the header has %s)", m.Field, strings.Join(header, ", "))}
		}
	}
	for row := 1; ; row++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return im.csvErr(err)
		}
		line, _ := cr.FieldPos(0)
		get := func(column string) cell {
			i := col[column]
			if i >= len(rec) {
				return cell{}
			}
			return cell{v: rec[i], present: true}
		}
		if err := im.row(line, row, get); err != nil {
			return err
		}
	}
}

func (im *importer) csvErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &records.InputError{File: im.name, Line: pe.Line, Msg: "CSV: " + pe.Err.Error()}
	}
	return &records.InputError{File: im.name, Msg: err.Error()}
}

func (im *importer) jsonl(r io.Reader) error {
	sc := jsonl.NewScanner(r, false)
	row := 0
	for sc.Scan() {
		row++
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			return &records.InputError{File: im.name, Line: sc.Line(), Msg: "want one JSON object per line: " + err.Error()}
		}
		get := func(column string) cell {
			v, ok := lookup(obj, column)
			return cell{v: v, present: ok}
		}
		if err := im.row(sc.Line(), row, get); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return &records.InputError{File: im.name, Line: sc.Line() + 1, Msg: err.Error()}
	}
	return nil
}

// lookup finds a JSONL column: a key of the object, else a dotted path
// into nested objects and arrays (response.body.choices.0.message.content,
// as an OpenAI Batch output line holds its answer), a number indexing an
// array from 0. A key that itself holds dots wins over the path.
func lookup(obj map[string]any, column string) (any, bool) {
	if v, ok := obj[column]; ok {
		return v, true
	}
	var cur any = obj
	for _, step := range strings.Split(column, ".") {
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[step]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// row builds the task of one row.
func (im *importer) row(line, row int, get func(column string) cell) error {
	bad := func(column, format string, args ...any) error {
		return &records.InputError{File: im.name, Line: line, Field: column, Msg: fmt.Sprintf(format, args...)}
	}
	t := eval.Task{ID: fmt.Sprintf("r%04d", row), TaskLabels: &eval.TaskLabels{}}
	str := map[string]*string{"id": &t.ID, "text": &t.Text, "tenant": &t.Tenant, "user": &t.User, "permission": &t.Permission,
		"lang": &t.Lang, "doc_version": &t.DocVersion, "group": &t.Group, "difficulty": &t.Difficulty}
	for f, v := range im.o.Set {
		*str[f] = v
	}
	for _, m := range im.o.Map {
		c := get(m.Column)
		if m.Pointer == "" {
			s, err := text(c.v)
			if err != nil {
				return bad(m.Column, "%s: %v", m.Field, err)
			}
			*str[m.Field] = s
			continue
		}
		v, ok, msg := coerce(c.v, im.fields[m.Pointer])
		if msg != "" {
			return bad(m.Column, "%s: %s", m.Field, msg)
		}
		if ok {
			if err := setPointer(&t.Expected, m.Pointer, v); err != nil {
				return bad(m.Column, "%s: %v", m.Field, err)
			}
		}
	}
	if _, dup := im.seen[t.ID]; dup && im.o.RepeatedIDs {
		return nil // the task's first row gave its fields
	}
	for _, f := range required {
		if strings.TrimSpace(*str[f]) == "" {
			return bad(im.columnOf(f), "%s: required and empty", f)
		}
	}
	if prev, dup := im.seen[t.ID]; dup {
		return bad(im.columnOf("id"), "duplicate id %q (first on line %d)", t.ID, prev)
	}
	line2, err := encodeTask(&t)
	if err != nil {
		return bad(im.columnOf("text"), "%v", err)
	}
	if !jsonl.Fits(line2) {
		return bad(im.columnOf(largestField(&t, str)), "the task would be a line of %d bytes in the tasks file, and crab reads lines shorter than %d MiB", len(line2), jsonl.MaxLine>>20)
	}
	im.seen[t.ID] = line
	im.tasks = append(im.tasks, t)
	return nil
}

// largestField names the task field that makes most of a task's size.
func largestField(t *eval.Task, str map[string]*string) string {
	best, n := "text", 0
	for f, p := range str {
		if len(*p) > n || (len(*p) == n && f < best) {
			best, n = f, len(*p)
		}
	}
	if raw, err := json.Marshal(t.Expected); err == nil && len(raw) > n {
		return "expected"
	}
	return best
}

// encodeTask is one task's line of a tasks file, without the newline.
func encodeTask(t *eval.Task) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(t); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// columnOf names the column a task field comes from, or the field itself
// when it comes from --set.
func (im *importer) columnOf(field string) string {
	for _, m := range im.o.Map {
		if m.Field == field {
			return m.Column
		}
	}
	return field
}

// text reads a task field's value: a string, or a JSON number or boolean
// written out.
func text(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return "", fmt.Errorf("want text, got a JSON %T", v)
}

// coerce turns a cell into the expected value the contract's field takes.
// ok is false for an empty cell: no label. Without a field (no contract)
// text stays text. msg says what is wrong.
func coerce(v any, f *contract.Field) (out any, ok bool, msg string) {
	s, isText := v.(string)
	if v == nil || (isText && strings.TrimSpace(s) == "") {
		return nil, false, ""
	}
	if !isText {
		out = v // a JSONL export's typed value, kept as it is
	} else if f == nil {
		out = s
	} else if out, msg = fromText(strings.TrimSpace(s), f); msg != "" {
		return nil, false, msg
	}
	if f != nil {
		if vs := f.Check(out); len(vs) > 0 {
			return nil, false, vs[0].Rule + ": " + vs[0].Message
		}
	}
	return out, true, ""
}

// fromText reads a cell as the first of the field's types it parses as:
// null, boolean, integer, number, a JSON array or object, or else a list
// of items separated by ';' (arrays), else the text itself (strings).
func fromText(s string, f *contract.Field) (any, string) {
	types := f.Types()
	if len(types) == 0 {
		types = []string{"string"}
	}
	order := []string{"null", "boolean", "integer", "number", "array", "object", "string"}
	sort.SliceStable(types, func(i, j int) bool { return slices.Index(order, types[i]) < slices.Index(order, types[j]) })
	for _, t := range types {
		switch t {
		case "null":
			if strings.EqualFold(s, "null") {
				return nil, ""
			}
		case "boolean":
			switch strings.ToLower(s) {
			case "true", "yes", "1":
				return true, ""
			case "false", "no", "0":
				return false, ""
			}
		case "integer":
			if _, err := strconv.ParseInt(s, 10, 64); err == nil {
				return json.Number(s), ""
			}
			if x, err := strconv.ParseFloat(s, 64); err == nil && x == float64(int64(x)) {
				return json.Number(strconv.FormatInt(int64(x), 10)), ""
			}
		case "number":
			if _, err := strconv.ParseFloat(s, 64); err == nil {
				return json.Number(s), ""
			}
		case "array":
			if strings.HasPrefix(s, "[") {
				if v, err := decodeJSON(s); err == nil {
					return v, ""
				}
			}
			items := []any{}
			for _, it := range strings.Split(s, ";") {
				if it = strings.TrimSpace(it); it == "" {
					continue
				}
				var v any = it
				if item := f.Items(); item != nil {
					var msg string
					if v, msg = fromText(it, item); msg != "" {
						return nil, msg
					}
				}
				items = append(items, v)
			}
			return items, ""
		case "object":
			if v, err := decodeJSON(s); err == nil {
				return v, ""
			}
		case "string":
			return s, ""
		}
	}
	return nil, fmt.Sprintf("%q is not %s (the contract's type for %s)", s, strings.Join(types, " or "), f.Pointer)
}

func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// setPointer stores v at ptr in the nested expected object, creating the
// objects on the way.
func setPointer(m *map[string]any, ptr string, v any) error {
	if *m == nil {
		*m = map[string]any{}
	}
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	cur := *m
	for i, tok := range toks {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if i == len(toks)-1 {
			cur[tok] = v
			return nil
		}
		next, ok := cur[tok].(map[string]any)
		if !ok {
			if _, taken := cur[tok]; taken {
				return fmt.Errorf("%s is both a value and an object", "/"+strings.Join(toks[:i+1], "/"))
			}
			next = map[string]any{}
			cur[tok] = next
		}
		cur = next
	}
	return nil
}

// Write encodes tasks as a crab tasks JSONL file. A task whose line crab's
// task reader would refuse is an error: Import refuses such rows first.
func Write(w io.Writer, tasks []eval.Task) error {
	for i := range tasks {
		line, err := encodeTask(&tasks[i])
		if err != nil {
			return err
		}
		if !jsonl.Fits(line) {
			return fmt.Errorf("taskimport: task %q is a line of %d bytes, longer than crab reads", tasks[i].ID, len(line))
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	return nil
}
