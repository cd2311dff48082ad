package recordimport

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
)

// spend is one LiteLLM_SpendLogs row as the proxy returns it: the table's
// columns in schema order, times as Python's isoformat writes them.
type spend struct {
	id, team, endUser, status string // status "" leaves the column out (older logs)
	start                     int    // seconds after 10:00
	ms                        int    // duration
	cacheHit                  bool
	tags                      []string
	metadata                  pyDict
	messages                  any
	spend                     float64
}

func (s spend) dict() pyDict {
	at := func(ms int) string {
		return fmt.Sprintf("2026-12-01T10:%02d:%02d.%06d+00:00", (s.start+ms/1000)/60, (s.start+ms/1000)%60, (ms%1000)*1000)
	}
	tags := make([]any, len(s.tags))
	for i, t := range s.tags {
		tags[i] = t
	}
	md := s.metadata
	if md == nil {
		md = pyDict{{"user_api_key", "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b"}, {"user_api_key_team_id", s.team}, {"spend_logs_metadata", nil}}
	}
	msgs := s.messages
	if msgs == nil {
		msgs = pyDict{}
	}
	d := pyDict{{"request_id", s.id}, {"call_type", "acompletion"}, {"api_key", "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b"},
		{"spend", s.spend}, {"total_tokens", 150}, {"prompt_tokens", 120}, {"completion_tokens", 30},
		{"startTime", at(0)}, {"endTime", at(s.ms)}, {"request_duration_ms", s.ms}, {"completionStartTime", at(s.ms)},
		{"model", "gpt-4o-mini"}, {"model_id", "a1b2"}, {"model_group", "small"}, {"custom_llm_provider", "openai"}, {"api_base", "https://api.openai.com"},
		{"user", ""}, {"metadata", md}, {"cache_hit", map[bool]string{true: "True", false: "False"}[s.cacheHit]}, {"cache_key", ""},
		{"request_tags", tags}, {"team_id", nilIfEmpty(s.team)}, {"organization_id", nil}, {"end_user", nilIfEmpty(s.endUser)},
		{"requester_ip_address", "10.0.0.7"}, {"messages", msgs}, {"response", pyDict{}}, {"session_id", nil}}
	if s.status != "" {
		d = append(d, kv{"status", s.status})
	}
	return append(d, kv{"mcp_namespaced_tool_name", nil}, kv{"agent_id", nil}, kv{"proxy_server_request", pyDict{}})
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// spendLogs is a /spend/logs answer: a JSON array of rows.
func spendLogs(rows ...spend) string {
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r.dict()
	}
	return pyJSON(out)
}

// failureMetadata is what LiteLLM stores for a failed call: the status (in
// metadata only, in logs older than the status column) and the error.
func failureMetadata(msg string) pyDict {
	return pyDict{{"user_api_key", "88dc28d0"}, {"status", "failure"},
		{"error_information", pyDict{{"error_code", "429"}, {"error_class", "RateLimitError"}, {"llm_provider", "openai"},
			{"traceback", "Traceback (most recent call last): ..."}, {"error_message", msg}}}}
}

// Older logs keep the status in metadata.status only; a failure there is
// a failure, its error text kept with the credential in it masked.
func TestLiteLLMStatusFromMetadata(t *testing.T) {
	t.Parallel()
	body := spendLogs(spend{id: "chatcmpl-1", ms: 800, spend: 0.0004},
		spend{id: "chatcmpl-2", ms: 30000, metadata: failureMetadata("litellm.RateLimitError: OpenAIException - rate limited for key sk-proj-AbCdEf0123456789AbCdEf0123456789")})
	imp, err := Read([]string{writeFile(t, t.TempDir(), "old.json", body)}, nil, FromLiteLLM)
	if err != nil {
		t.Fatal(err)
	}
	f := imp.Records[1]
	if f.Outcome != records.OutcomeError || !strings.Contains(f.Error, "RateLimitError: 429: litellm.RateLimitError: OpenAIException - rate limited") {
		t.Errorf("failure in metadata.status: outcome %s error %q", f.Outcome, f.Error)
	}
	if strings.Contains(f.Error, "AbCdEf0123456789") {
		t.Errorf("the key in the error text was kept: %q", f.Error)
	}
	if imp.Records[0].Outcome != records.OutcomeOK {
		t.Errorf("a row without status: outcome %s", imp.Records[0].Outcome)
	}
	// The status column, where it exists, decides.
	body = spendLogs(spend{id: "chatcmpl-3", ms: 100, status: "failure"})
	imp, err = Read([]string{writeFile(t, t.TempDir(), "new.json", body)}, nil, FromLiteLLM)
	if err != nil || imp.Records[0].Outcome != records.OutcomeError || !strings.Contains(imp.Records[0].Error, "keeps no error text") {
		t.Errorf("status column: %v %+v", err, imp)
	}
}

// Tenant comes from team_id and group from the request tags unless --map
// says otherwise; a mapping field that does not exist is refused naming
// the option, one that no row has naming the file.
func TestLiteLLMTenantAndGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := writeFile(t, dir, "logs.json", spendLogs(
		spend{id: "a", team: "team-support", endUser: "cust-1", ms: 500, tags: []string{"route:faq", "task=7"}},
		spend{id: "b", team: "team-sales", endUser: "cust-2", ms: 600, tags: []string{"route:quote"}}))
	imp, err := Read([]string{p}, nil, FromLiteLLM)
	if err != nil {
		t.Fatal(err)
	}
	if r := imp.Records[0]; r.Tenant != "team-support" || r.Group != "route:faq,task=7" {
		t.Errorf("default mapping: tenant %q group %q", r.Tenant, r.Group)
	}
	imp, err = ReadOptions{From: FromLiteLLM, Map: []string{"tenant=end_user,group=tag:route:"}}.Read([]string{p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := imp.Records[1]; r.Tenant != "cust-2" || r.Group != "quote" {
		t.Errorf("--map: tenant %q group %q", r.Tenant, r.Group)
	}
	for _, c := range []struct {
		m    []string
		want string
	}{
		{[]string{"tenant=teamid"}, `--map tenant=teamid: field "teamid": unknown field`},
		{[]string{"tennant=team_id"}, `unknown record field "tennant"`},
		{[]string{"group=metadata.workflow"}, p + `: field "metadata.workflow": --map group=metadata.workflow: no row of this file has it`},
	} {
		_, err := ReadOptions{From: FromLiteLLM, Map: c.m}.Read([]string{p}, nil)
		if err == nil || !errors.Is(err, records.ErrBadInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--map %q: got %v; want %q", c.m, err, c.want)
		}
	}
}

// /spend/logs/v2 wraps its rows in an envelope: read; a page of several is
// refused, since the other pages' requests are missing.
func TestLiteLLMV2Envelope(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := spendLogs(spend{id: "a", ms: 500}, spend{id: "b", ms: 700})
	p := writeFile(t, dir, "v2.json", `{"data": `+rows+`, "total": 2, "page": 1, "page_size": 50, "total_pages": 1}`)
	imp, err := Read([]string{p}, nil, FromLiteLLM)
	if err != nil || len(imp.Records) != 2 || imp.Records[1].E2EMs != 700 {
		t.Fatalf("v2 envelope: %v %+v", err, imp)
	}
	p = writeFile(t, dir, "page.json", `{"data": `+rows+`, "total": 120, "page": 1, "page_size": 50, "total_pages": 3}`)
	if _, err := Read([]string{p}, nil, FromLiteLLM); err == nil || !strings.Contains(err.Error(), "page 1 of 3") {
		t.Errorf("a first page: got %v", err)
	}
}

// /spend/logs with dates summarizes by day unless asked not to: refused
// with the query that returns one row per request.
func TestLiteLLMSummarizedRefused(t *testing.T) {
	t.Parallel()
	body := pyJSON([]any{pyDict{{"users", pyDict{{"cust-1", 0.3}}}, {"models", pyDict{{"gpt-4o-mini", 0.3}}}, {"spend", 0.3},
		{"88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b", 0.3}, {"startTime", "2026-12-01"}}})
	_, err := Read([]string{writeFile(t, t.TempDir(), "sum.json", body)}, nil, FromLiteLLM)
	if err == nil || !strings.Contains(err.Error(), "summarize=false") || !strings.Contains(err.Error(), `field "[0]"`) {
		t.Errorf("got %v; want the row named and the query that gives rows", err)
	}
}

// Two logs pair only by a key both runs share: LiteLLM's request_id is the
// provider's answer id, new each call, so by default nothing pairs, said
// plainly; a declared tag, metadata field or the stored messages pair
// them; a cache hit's _cache_hit suffix is no other task.
func TestLiteLLMPairing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	msg := func(q string) any { return []any{pyDict{{"role", "user"}, {"content", q}}} }
	md := func(task string) pyDict {
		return pyDict{{"user_api_key", "88dc"}, {"spend_logs_metadata", pyDict{{"task", task}}}}
	}
	base := writeFile(t, dir, "base.json", spendLogs(
		spend{id: "chatcmpl-AAA1", ms: 800, tags: []string{"task=1"}, messages: msg("What is the capital of France?"), metadata: md("1")},
		spend{id: "chatcmpl-AAA2", ms: 700, tags: []string{"task=2"}, messages: msg("2+2?"), metadata: md("2")},
		spend{id: "chatcmpl-AAA1_cache_hit1764842400.123456", ms: 5, cacheHit: true, tags: []string{"task=1"}, messages: msg("What is the capital of France?"), metadata: md("1")}))
	cand := writeFile(t, dir, "cand.json", spendLogs(
		spend{id: "chatcmpl-BBB7", ms: 600, tags: []string{"task=2"}, messages: msg("2+2?"), metadata: md("2")},
		spend{id: "chatcmpl-BBB8", ms: 650, tags: []string{"task=1"}, messages: msg("What is the capital of France?"), metadata: md("1")}))
	_, err := Read([]string{base, cand}, nil, FromLiteLLM)
	var ie *records.InputError
	if !errors.As(err, &ie) || ie.File != cand || !strings.Contains(ie.Msg, "no request pairs") || !strings.Contains(ie.Msg, "--pair-key") || strings.Contains(ie.Msg, "different work") {
		t.Fatalf("default key: got %v; want a clear no-pairs error with --pair-key", err)
	}
	for _, key := range []string{"tag:task=", "messages", "metadata.spend_logs_metadata.task"} {
		imp, err := ReadOptions{From: FromLiteLLM, PairKey: key}.Read([]string{base, cand}, nil)
		if err != nil {
			t.Fatalf("--pair-key %s: %v", key, err)
		}
		b0, hit, c1 := imp.Records[0], imp.Records[2], imp.Records[4]
		if b0.TaskID != c1.TaskID || b0.TaskID != hit.TaskID || hit.Repeat != 1 || b0.Repeat != 0 {
			t.Errorf("--pair-key %s: tasks %q %q %q, hit repeat %d", key, b0.TaskID, hit.TaskID, c1.TaskID, hit.Repeat)
		}
		if _, err := records.SetOf(imp.Records); err != nil {
			t.Errorf("--pair-key %s: %v", key, err)
		}
	}
	// By request_id, a hit is its original request again.
	imp, err := Read([]string{base}, nil, FromLiteLLM)
	if err != nil || imp.Records[2].TaskID != "chatcmpl-AAA1" || imp.Records[2].Repeat != 1 {
		t.Errorf("cache hit id: %v %+v", err, imp.Records[2])
	}
	other := writeFile(t, dir, "other.json", spendLogs(spend{id: "x", ms: 100, tags: []string{"task=99"}}))
	if _, err := (ReadOptions{From: FromLiteLLM, PairKey: "tag:task="}).Read([]string{base, other}, nil); err == nil || !strings.Contains(err.Error(), "share no value") {
		t.Errorf("a key that pairs nothing: got %v", err)
	}
	if _, err := (ReadOptions{From: FromLiteLLM, PairKey: "tag:job="}).Read([]string{base}, nil); err == nil || !strings.Contains(err.Error(), base+`:1: field "[0].tag:job="`) {
		t.Errorf("a row without the key: got %v", err)
	}
	if _, err := (ReadOptions{From: FromLiteLLM, PairKey: "taskid"}).Read([]string{base}, nil); err == nil || !strings.Contains(err.Error(), `--pair-key: field "taskid": unknown field`) {
		t.Errorf("an unknown key: got %v", err)
	}
}

// A table export (CSV, a byte order mark from a spreadsheet, the Json
// columns as JSON text) reads as the API's rows do.
func TestLiteLLMCSVExport(t *testing.T) {
	t.Parallel()
	body := "\xef\xbb\xbfrequest_id,startTime,endTime,spend,team_id,request_tags,metadata\n" +
		`chatcmpl-1,2026-12-01 10:00:00.000,2026-12-01 10:00:00.800,0.0004,team-a,"[""task=1""]","{""status"": ""failure"", ""error_information"": {""error_message"": ""boom""}}"` + "\n"
	imp, err := ReadOptions{From: FromLiteLLM, PairKey: "tag:task="}.Read([]string{writeFile(t, t.TempDir(), "export.csv", body)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := imp.Records[0]; r.TaskID != "1" || r.Tenant != "team-a" || r.Outcome != records.OutcomeError || r.Error != "boom" {
		t.Errorf("%+v", r)
	}
	// A database export writes a text[] column as a PostgreSQL array.
	body = "request_id,startTime,endTime,request_tags\nchatcmpl-1,2026-12-01 10:00:00,2026-12-01 10:00:01,\"{task=4,\"\"route:faq\"\"}\"\n"
	imp, err = ReadOptions{From: FromLiteLLM, PairKey: "tag:task="}.Read([]string{writeFile(t, t.TempDir(), "pg.csv", body)}, nil)
	if err != nil || imp.Records[0].TaskID != "4" || imp.Records[0].Group != "task=4,route:faq" {
		t.Errorf("a PostgreSQL array of tags: %v %+v", err, imp)
	}
}
