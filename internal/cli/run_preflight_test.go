package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run whose OpenAI-compatible server does not answer GET /models stops
// before its first request: exit 1 naming the model and the URL, nothing
// written.
func TestRunPreflight(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	dir := t.TempDir()
	exp := filepath.Join(dir, "exp.yaml")
	os.WriteFile(exp, []byte(`name: preflight
tasks: embedded:tasks.jsonl
contract: embedded:triage.schema.json
arrival: {pattern: burst}
models:
  - {name: remote, backend: openai, base_url: "`+down.URL+`/v1", model: m}
arms:
  - {name: baseline, model: remote}
`), 0o644)
	out := filepath.Join(dir, "run")
	code, stdout, errs := crab(t, "", "run", "-e", exp, "-o", out)
	want := "crab: openai: server does not answer: model remote: GET " + down.URL + "/v1/models: "
	if code != 1 || stdout != "" || !strings.HasPrefix(errs, want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and one line starting %q", code, stdout, errs, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("run directory created although the server is down")
	}
}
