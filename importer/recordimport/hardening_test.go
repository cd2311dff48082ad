package recordimport

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
)

// A file of another tool under the wrong --from is refused naming the file
// and the --from that reads it.
func TestWrongFrom(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	vllm := writeVLLM(t, dir, "v.json", run4("d"))
	lite := writeFile(t, dir, "l.json", spendLogs(spend{id: "a", ms: 100}))
	crab := writeFile(t, dir, "records.jsonl", `{"run_id":"r","arm":"a","repeat":0,"seq":0,"task_id":"t1","group":"","tenant":"x","outcome":"ok","e2e_ms":5}`+"\n")
	for _, c := range []struct {
		path, from, want string
	}{
		{vllm, FromLiteLLM, "read it with --from vllm"},
		{lite, FromVLLM, "read it with --from litellm"},
		{crab, FromVLLM, "read it with no --from"},
		{crab, FromLiteLLM, "read it with no --from"},
	} {
		_, err := Read([]string{c.path}, nil, c.from)
		if err == nil || !errors.Is(err, records.ErrBadInput) || !strings.Contains(err.Error(), c.path+`: field "--from"`) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with --from %s: got %v; want %q", filepath.Base(c.path), c.from, err, c.want)
		}
	}
}

// Every importer handles a byte order mark the same way (dropped) and
// refuses text that is not UTF-8, naming file, line and field.
func TestImportEncoding(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bom := "\xef\xbb\xbf"
	for _, c := range []struct{ name, from, body string }{
		{"v.json", FromVLLM, bom + pyJSON(run4("d").dict())},
		{"l.json", FromLiteLLM, bom + spendLogs(spend{id: "a", ms: 100})},
		{"l.csv", FromLiteLLM, bom + "request_id,startTime,endTime\na,2026-12-01 10:00:00,2026-12-01 10:00:01\n"},
	} {
		if _, err := Read([]string{writeFile(t, dir, c.name, c.body)}, nil, c.from); err != nil {
			t.Errorf("%s with a byte order mark: %v", c.name, err)
		}
	}
	for _, c := range []struct{ name, from, body, want string }{
		{"v.json", FromVLLM, "{\"date\": \"x\",\n\"ttfts\": [0.1, 0.2], \"latencies\": [0.2, 0.3],\n\"errors\": [\"\", \"upstream said \xff\"]}", `v.json:3: field "errors[1]": not valid UTF-8`},
		{"s.json", FromVLLM, `{"ttfts": [0.1], "generated_texts": ["\ud800"], "errors": [""]}`, `s.json:1: field "generated_texts[0]": a lone UTF-16 surrogate`},
		{"l.csv", FromLiteLLM, "request_id,startTime,endTime,team_id\na,2026-12-01 10:00:00,2026-12-01 10:00:01,\xe9quipe\n", `l.csv:2: field "team_id": not valid UTF-8`},
	} {
		_, err := Read([]string{writeFile(t, dir, c.name, c.body)}, nil, c.from)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v; want %q", c.name, err, c.want)
		}
	}
}

// An arm is named after its file: a name with control characters is
// refused; a FIFO or a device is not read.
func TestImportFileNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := writeVLLM(t, dir, "base\x1b[31mred.json", run4("d"))
	if _, err := Read([]string{p}, nil, FromVLLM); err == nil || !strings.Contains(err.Error(), "control character U+001B") || !strings.Contains(err.Error(), "rename the file") {
		t.Errorf("an arm name with an escape: got %v", err)
	}
	fifo := filepath.Join(dir, "pipe.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	for _, p := range []string{fifo, "/dev/zero"} {
		if _, err := Read([]string{p}, nil, FromVLLM); err == nil || !strings.Contains(err.Error(), p+": not a regular file") {
			t.Errorf("%s: got %v", p, err)
		}
	}
}
