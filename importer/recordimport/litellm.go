package recordimport

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/importer/taskimport"
	"github.com/crab-testbed/crab/internal/infile"
	"github.com/crab-testbed/crab/internal/redact"
)

// litellmNotes say what a LiteLLM spend log does not carry.
var litellmNotes = []string{
	"records imported from LiteLLM spend logs carry no grading and no cache scope: quality is unmeasured (\"-\") and a hit's leak unchecked, and the gate decides nothing on them",
}

// litellmColumns are the columns of LiteLLM's LiteLLM_SpendLogs table,
// the names --pair-key and --map may give besides metadata.PATH, tag:PREFIX,
// tags and messages.
var litellmColumns = []string{"request_id", "call_type", "api_key", "spend", "total_tokens", "prompt_tokens", "completion_tokens",
	"startTime", "endTime", "request_duration_ms", "completionStartTime", "model", "model_id", "model_group", "custom_llm_provider",
	"api_base", "user", "metadata", "cache_hit", "cache_key", "request_tags", "team_id", "organization_id", "end_user",
	"requester_ip_address", "messages", "response", "session_id", "status", "mcp_namespaced_tool_name", "agent_id", "proxy_server_request"}

// litellmDefaultMap is where tenant and group come from unless --map
// says otherwise: the team of the virtual key, and the request tags.
var litellmDefaultMap = map[string]string{"tenant": "team_id", "group": "tags"}

// cacheHitSuffix is what LiteLLM appends to the request_id of a cache hit
// (a primary key may not repeat the id of the answer it served again).
var cacheHitSuffix = regexp.MustCompile(`_cache_hit[0-9]+(\.[0-9]+)?$`)

// errorTextMax bounds the error text kept per record: a stack trace says
// nothing more about the outcome than its first lines.
const errorTextMax = 2000

// litellmMapping is what the options map: the record fields and the pair
// key, each a field reference checked once.
type litellmMapping struct {
	tenant, group, pairKey string
	flag                   map[string]string // the option that set each ("--map tenant=…")
}

// litellmMapping checks and resolves --map and --pair-key.
func (o ReadOptions) litellmMapping() (*litellmMapping, error) {
	m := &litellmMapping{tenant: litellmDefaultMap["tenant"], group: litellmDefaultMap["group"], pairKey: "request_id", flag: map[string]string{}}
	if o.PairKey != "" {
		m.pairKey, m.flag["pair"] = o.PairKey, "--pair-key "+o.PairKey
		if err := checkRef(o.PairKey, "--pair-key", true); err != nil {
			return nil, err
		}
	}
	pairs, err := taskimport.MapPairs(o.Map)
	if err != nil {
		return nil, &records.InputError{File: "--map", Msg: err.Error() + ", such as tenant=end_user or group=tag:route:"}
	}
	for _, p := range pairs {
		f, ref := p[0], p[1]
		flag := "--map " + f + "=" + ref
		switch f {
		case "tenant":
			m.tenant = ref
		case "group":
			m.group = ref
		default:
			return nil, &records.InputError{File: "--map", Field: f, Msg: fmt.Sprintf("%s: unknown record field %q (want tenant or group)", flag, f)}
		}
		if err := checkRef(ref, flag, false); err != nil {
			return nil, err
		}
		m.flag[f] = flag
	}
	return m, nil
}

// checkRef checks a field reference of --map or --pair-key.
func checkRef(ref, flag string, pair bool) error {
	switch {
	case strings.HasPrefix(ref, "metadata.") && len(ref) > len("metadata."),
		strings.HasPrefix(ref, "tag:") && len(ref) > len("tag:"),
		ref == "tags", ref == "none" && !pair, ref == "messages" && pair,
		slices.Contains(litellmColumns, ref) && ref != "metadata" && ref != "request_tags" && ref != "messages":
		return nil
	}
	return &records.InputError{File: flag, Field: ref, Msg: "unknown field: want a LiteLLM_SpendLogs column (team_id, end_user, user, session_id, …), metadata.PATH (a field of the row's metadata, such as metadata.spend_logs_metadata.task), tag:PREFIX (the request tag starting with PREFIX), tags (every request tag)" +
		map[bool]string{true: " or messages (a hash of the stored prompt)", false: " or none"}[pair]}
}

// readLiteLLM reads a spend-log export: a JSON array of rows (what the
// proxy's /spend/logs returns), the object /spend/logs/v2 returns (its rows
// under data), JSON lines, or CSV with a header (a table export; columns
// crab does not read are skipped).
func readLiteLLM(data []byte, name, arm string, o ReadOptions) ([]armRecords, error) {
	if head := data[:min(len(data), sniffLen)]; !bytes.Contains(head, []byte("request_id")) {
		if from := sniffData(head); from == FromVLLM || from == FromCrab {
			return nil, wrongFrom(name, FromLiteLLM, from)
		}
	}
	m, err := o.litellmMapping()
	if err != nil {
		return nil, err
	}
	a := armRecords{arm: arm, keys: map[string]bool{}}
	seen := map[string]int{} // pair key → rows so far: the repeat of the next
	found := map[string]bool{}
	emit := func(r litellmRow) error {
		rec, key, err := litellmRecord(r, m, found)
		if err != nil {
			return err
		}
		rec.Arm, rec.Seq, rec.TaskID, rec.Repeat = arm, len(a.recs), key, seen[key]
		seen[key]++
		a.keys[key] = true
		a.recs = append(a.recs, rec)
		a.lines = append(a.lines, r.line)
		return nil
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case len(trimmed) == 0:
		return nil, &records.InputError{File: name, Msg: "no records"}
	case trimmed[0] == '[':
		err = litellmArray(data, name, emit)
	case trimmed[0] == '{':
		var env struct {
			Data       json.RawMessage `json:"data"`
			TotalPages *int            `json:"total_pages"`
			Page       *int            `json:"page"`
		}
		if first, ok := firstValue(data); ok && json.Unmarshal(first, &env) == nil && len(env.Data) > 0 {
			if env.TotalPages != nil && env.Page != nil && *env.Page < *env.TotalPages {
				return nil, &records.InputError{File: name, Field: "page", Msg: fmt.Sprintf("page %d of %d of /spend/logs/v2: the other pages' requests are not in the file; fetch every page (page=1..%d) and pass them joined as one JSON array, or raise page_size", *env.Page, *env.TotalPages, *env.TotalPages)}
			}
			err = litellmArray(data, name, emit, "data")
			break
		}
		if data, err = linesBounded(data, name); err == nil {
			err = litellmLines(data, name, emit)
		}
	default:
		if data, err = linesBounded(data, name); err == nil {
			err = litellmCSV(data, name, emit)
		}
	}
	if err != nil {
		return nil, err
	}
	for _, f := range []string{"tenant", "group", "pair"} {
		ref := map[string]string{"tenant": m.tenant, "group": m.group, "pair": m.pairKey}[f]
		if flag := m.flag[f]; flag != "" && len(a.recs) > 0 && !found[ref] {
			return nil, &records.InputError{File: name, Field: ref, Msg: fmt.Sprintf("%s: no row of this file has it%s", flag, messagesHint(ref))}
		}
	}
	return []armRecords{a}, nil
}

func messagesHint(ref string) string {
	if ref == "messages" {
		return " (LiteLLM stores the messages only with store_prompts_in_spend_logs: true in general_settings)"
	}
	return ""
}

// linesBounded checks the lines of a line-oriented export against the
// longest line crab reads.
func linesBounded(data []byte, name string) ([]byte, error) {
	out, err := infile.Clean(data, name, infile.Options{MaxLine: infile.MaxLine})
	return out, records.FileError(err)
}

// firstValue is the first JSON value of data, when it is one whole.
func firstValue(data []byte) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if dec.Decode(&raw) != nil {
		return nil, false
	}
	return raw, true
}

// jsonRow makes a litellmRow of a decoded JSON object.
func jsonRow(name string, line int, obj map[string]any) litellmRow {
	return litellmRow{name: name, line: line, get: func(field string) (any, bool) {
		v, ok := obj[field]
		return v, ok && v != nil
	}}
}

// summarizedQuery is the request that returns one row per request
// instead of the daily sums /spend/logs returns by default.
const summarizedQuery = "GET /spend/logs?start_date=YYYY-MM-DD&end_date=YYYY-MM-DD&summarize=false (or /spend/logs/v2?start_date=…&end_date=…, every page)"

// litellmArray reads the rows of a JSON array, at the top of the file or
// under key (the v2 envelope's data).
func litellmArray(data []byte, name string, emit func(litellmRow) error, key ...string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if len(key) > 0 {
		// Walk to the array under key.
		if _, err := dec.Token(); err != nil {
			return &records.InputError{File: name, Msg: "invalid JSON: " + err.Error()}
		}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return &records.InputError{File: name, Msg: "invalid JSON: " + err.Error()}
			}
			if t == key[0] {
				break
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return &records.InputError{File: name, Msg: "invalid JSON: " + err.Error()}
			}
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return &records.InputError{File: name, Field: strings.Join(key, ""), Msg: "want a JSON array of spend-log rows"}
	}
	prefix := strings.Join(key, "")
	oneLine := bytes.Count(bytes.TrimSpace(data), []byte("\n")) == 0
	for i := 0; dec.More(); i++ {
		off := dec.InputOffset()
		for off < int64(len(data)) && strings.IndexByte(" \t\r\n,", data[off]) >= 0 {
			off++
		}
		line := lineAt(data, off)
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			return &records.InputError{File: name, Line: line, Field: fmt.Sprintf("%s[%d]", prefix, i), Msg: "want a JSON object (a spend-log row): " + err.Error()}
		}
		if summarizedRow(obj) {
			return &records.InputError{File: name, Line: line, Field: fmt.Sprintf("%s[%d]", prefix, i),
				Msg: "daily sums, not requests: /spend/logs summarizes by day when given start_date and end_date; fetch one row per request with " + summarizedQuery}
		}
		row := jsonRow(name, line, obj)
		if oneLine {
			row.at = fmt.Sprintf("%s[%d]", prefix, i)
		}
		if err := emit(row); err != nil {
			return err
		}
	}
	return nil
}

// summarizedRow reports whether obj is a day of /spend/logs' summarized
// answer (startTime, spend, users and models; no request_id).
func summarizedRow(obj map[string]any) bool {
	_, id := obj["request_id"]
	_, users := obj["users"]
	_, models := obj["models"]
	return !id && (users || models)
}

func litellmLines(data []byte, name string, emit func(litellmRow) error) error {
	for i, raw := range bytes.Split(data, []byte("\n")) {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil || dec.More() {
			msg := "want one JSON object (a spend-log row) per line"
			if err != nil {
				msg += ": " + err.Error()
			}
			return &records.InputError{File: name, Line: i + 1, Msg: msg}
		}
		if summarizedRow(obj) {
			return &records.InputError{File: name, Line: i + 1, Msg: "daily sums, not requests: fetch one row per request with " + summarizedQuery}
		}
		if err := emit(jsonRow(name, i+1, obj)); err != nil {
			return err
		}
	}
	return nil
}

func litellmCSV(data []byte, name string, emit func(litellmRow) error) error {
	cr := csv.NewReader(bytes.NewReader(data))
	header, err := cr.Read()
	if err != nil {
		return csvFault(name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	if _, ok := col["request_id"]; !ok {
		if _, users := col["users"]; users {
			return &records.InputError{File: name, Line: 1, Msg: "daily sums, not requests: fetch one row per request with " + summarizedQuery}
		}
	}
	for {
		fields, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return csvFault(name, err)
		}
		line, _ := cr.FieldPos(0)
		row := litellmRow{name: name, line: line, get: func(field string) (any, bool) {
			i, ok := col[field]
			if !ok {
				return nil, false
			}
			v := strings.TrimSpace(fields[i])
			return v, v != ""
		}}
		if err := emit(row); err != nil {
			return err
		}
	}
}

func csvFault(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &records.InputError{File: name, Line: pe.Line, Msg: "invalid CSV: " + pe.Err.Error()}
	}
	return &records.InputError{File: name, Msg: "invalid CSV: " + err.Error()}
}

// litellmRecord maps one spend-log row to a record and its pair key (see
// docs/formats.md); found collects the field references the row has.
func litellmRecord(r litellmRow, m *litellmMapping, found map[string]bool) (records.Record, string, error) {
	rec := records.Record{Outcome: records.OutcomeOK, ContractOK: true, Attempts: 1, RunID: "litellm", Unmeasured: []string{records.FigureQuality, records.FigureLoad}}
	if _, ok := r.str("request_id"); !ok {
		return rec, "", r.fail("request_id", "required and empty")
	}
	key, ok, err := r.ref(m.pairKey)
	if err != nil {
		return rec, "", err
	}
	if !ok {
		return rec, "", r.fail(m.pairKey, fmt.Sprintf("%s: the row has no value for the pair key%s", m.flag["pair"], messagesHint(m.pairKey)))
	}
	found[m.pairKey] = true
	for _, f := range []struct {
		ref string
		dst *string
	}{{m.tenant, &rec.Tenant}, {m.group, &rec.Group}} {
		v, ok, err := r.ref(f.ref)
		if err != nil {
			return rec, "", err
		}
		if ok {
			*f.dst, found[f.ref] = v, true
		}
	}
	rec.Model, _ = r.str("model")
	if g, ok := r.str("model_group"); ok && rec.Model == "" {
		rec.Model = g
	}
	if rec.SentAt, err = litellmTime(r, "startTime", true); err != nil {
		return rec, "", err
	}
	if rec.DoneAt, err = litellmTime(r, "endTime", true); err != nil {
		return rec, "", err
	}
	if rec.DoneAt.Before(rec.SentAt) {
		return rec, "", r.fail("endTime", "before startTime")
	}
	rec.IntendedAt = rec.SentAt
	rec.E2EMs = records.Ms(rec.DoneAt.Sub(rec.SentAt))
	rec.ModelMs = rec.E2EMs
	first, err := litellmTime(r, "completionStartTime", false)
	if err != nil {
		return rec, "", err
	}
	// LiteLLM sets completionStartTime to endTime when the response was
	// not streamed: no first byte was seen apart from the whole answer.
	if !first.IsZero() && first.Before(rec.DoneAt) && !first.Before(rec.SentAt) {
		rec.FirstByteAt = first
		rec.TTFTMs = records.Ms(first.Sub(rec.SentAt))
	}
	if rec.Cost, err = litellmNumber(r, "spend"); err != nil {
		return rec, "", err
	}
	if _, ok := r.str("spend"); !ok {
		rec.MarkUnmeasured(records.FigureCost) // no spend is not a spend of 0
	}
	for _, f := range []struct {
		field string
		dst   *int
	}{{"prompt_tokens", &rec.TokensIn}, {"completion_tokens", &rec.TokensOut}} {
		v, err := litellmNumber(r, f.field)
		if err != nil {
			return rec, "", err
		}
		if v != math.Trunc(v) {
			return rec, "", r.fail(f.field, fmt.Sprintf("want a whole number, got %v", v))
		}
		*f.dst = int(v)
		if _, ok := r.str(f.field); !ok {
			rec.MarkUnmeasured(records.FigureTokens)
		}
	}
	if v, ok := r.str("cache_hit"); ok {
		switch strings.ToLower(v) {
		case "true", "1":
			rec.Cache, rec.Leak = "hit", records.LeakUnchecked
		case "false", "0", "none":
			rec.Cache = "miss"
		default:
			return rec, "", r.fail("cache_hit", fmt.Sprintf("want True or False, got %q", v))
		}
	}
	if err := litellmStatus(r, &rec); err != nil {
		return rec, "", err
	}
	return rec, key, nil
}

// litellmStatus sets the outcome from the row's status, or from
// metadata.status, where LiteLLM kept it before the status column, and
// keeps the error text LiteLLM stores in metadata.error_information
// (credentials masked).
func litellmStatus(r litellmRow, rec *records.Record) error {
	field := "status"
	v, ok := r.str("status")
	if !ok {
		var err error
		if v, ok, err = r.ref("metadata.status"); err != nil {
			return err
		}
		field = "metadata.status"
	}
	if !ok {
		return nil
	}
	switch strings.ToLower(v) {
	case "success":
		return nil
	case "failure":
	default:
		return r.fail(field, fmt.Sprintf("want success or failure, got %q", v))
	}
	rec.Outcome, rec.Error = records.OutcomeError, "litellm: failure (the log keeps no error text)"
	var parts []string
	for _, k := range []string{"error_class", "error_code", "error_message"} {
		if s, ok, _ := r.ref("metadata.error_information." + k); ok {
			parts = append(parts, s)
		}
	}
	if len(parts) > 0 {
		text := redact.String(strings.Join(parts, ": "))
		if len(text) > errorTextMax {
			text = strings.ToValidUTF8(text[:errorTextMax], "") + " …"
		}
		rec.Error = text
	}
	return nil
}

// checkLiteLLMPairing refuses logs that pair no request: each arm is
// compared with the first one, by the pair key.
func (o ReadOptions) checkLiteLLMPairing(arms []armRecords, names []string) error {
	if len(arms) < 2 {
		return nil
	}
	key := o.PairKey
	if key == "" {
		key = "request_id"
	}
	for k := 1; k < len(arms); k++ {
		shared := 0
		for id := range arms[k].keys {
			if arms[0].keys[id] {
				shared++
			}
		}
		if shared > 0 {
			continue
		}
		msg := fmt.Sprintf("no request pairs with one of %s by %s, so the two logs cannot be compared request by request", names[0], key)
		if o.PairKey == "" {
			msg += "; LiteLLM's request_id is the provider's answer id, new on every call: declare what identifies a task in both runs with --pair-key (a request tag such as --pair-key tag:task= when the callers send metadata.tags [\"task=ID\"], a metadata field such as --pair-key metadata.spend_logs_metadata.task, or --pair-key messages to pair the same stored prompts)"
		} else {
			msg += fmt.Sprintf(" (--pair-key %s): the runs share no value of it", o.PairKey)
		}
		return &records.InputError{File: names[k], Field: key, Msg: msg}
	}
	return nil
}

// litellmNumber reads a number of 0 or more; an absent field is 0.
func litellmNumber(r litellmRow, field string) (float64, error) {
	s, ok := r.str(field)
	if !ok {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, r.fail(field, fmt.Sprintf("want a finite number of 0 or more, got %q", s))
	}
	return v, nil
}

// litellmLayouts are the time forms of spend-log exports: the API's
// RFC 3339 and a database export's "2006-01-02 15:04:05.000" (UTC when it
// names no zone).
var litellmLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"}

func litellmTime(r litellmRow, field string, required bool) (time.Time, error) {
	s, ok := r.str(field)
	if !ok {
		if required {
			return time.Time{}, r.fail(field, "required and empty")
		}
		return time.Time{}, nil
	}
	for _, l := range litellmLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, r.fail(field, fmt.Sprintf("want a time such as 2026-12-01T10:00:00.250Z or 2026-12-01 10:00:00.250, got %q", s))
}
