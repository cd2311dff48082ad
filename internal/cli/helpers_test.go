package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/crab-testbed/crab/internal/tunefixture"
)

// TestMain runs the tests from the module root, where a user types crab's
// commands: the paths they name (fixtures/, examples/, testdata/, docs/)
// and the paths crab prints back are the ones the docs show.
// It also holds the folder of the runs tests share, removed at the end.
func TestMain(m *testing.M) {
	root, err := moduleRoot()
	if err == nil {
		err = os.Chdir(root)
	}
	if err == nil {
		shared, err = os.MkdirTemp("", "crab-cli-test-")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(shared)
	os.Exit(code)
}

// shared is the folder of the runs tests share (see quickRun).
var shared string

// moduleRoot is the nearest directory above the working directory that
// holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
}

// skipShort skips a test that runs whole experiments, tuning sweeps or a
// browser under go test -short, the edit-test loop; the README's test
// command and CI run it.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs whole experiments or a browser; skipped under -short")
	}
}

// cliMu serialises the parsing of in-process runs: urfave/cli's help
// flag is a package variable that every App writes while parsing. The
// lock is let go as the command's action starts, so that whole runs,
// tuning sweeps and servers of parallel tests work at once.
var cliMu sync.Mutex

// crab runs the command line in-process and returns its exit code and output.
func crab(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cliMu.Lock()
	release := sync.OnceFunc(cliMu.Unlock)
	parsed = release
	defer release()
	var out, errb bytes.Buffer
	code := Main(context.Background(), append([]string{"crab"}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

type armJSON struct {
	Name        string   `json:"name"`
	N           int      `json:"n"`
	Pass        int      `json:"pass"`
	P95         float64  `json:"p95_ms"`
	Cost        float64  `json:"cost"`
	CostPerPass *float64 `json:"cost_per_pass"`
	Verdict     string   `json:"verdict"`
	Reasons     []string `json:"reasons"`
}

type summaryJSON struct {
	Arms []armJSON `json:"arms"`
}

// syncBuffer is a bytes.Buffer that goroutines may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

const quickExperiment = `name: quick
tasks: embedded:tasks.jsonl
contract: embedded:triage.schema.json
seed: 7
time_scale: 0
arrival: {pattern: burst}
concurrency: 16
max_in_flight: 16  # a client pool of 16: repeats in the burst find earlier answers cached
timeout: 2s
retry: {max_attempts: 2}
# At time_scale 0 latency is scheduler noise: judge on cost, no p95 guardrail.
gate: {objective: cost, p95_regress_pct: 1000000}
models:
  - {name: small, kind: small, price_in_per_mtok: 0.15, price_out_per_mtok: 0.6, faults: {error: 0.02, malformed: 0.02}}
  - {name: large, kind: large, price_in_per_mtok: 2.5, price_out_per_mtok: 10, faults: {error: 0.02, malformed: 0.01}}
arms:
  - {name: baseline, model: large}
  - {name: cache_scoped, model: large, cache: {key: full}}
  - {name: cache_naive, model: large, cache: {key: text, check_on_hit: false}}
  - {name: router, router: {threshold: 0.5, small: small, large: large}}
  - {name: short, model: large, mode: short, max_tokens: 160}
  - {name: cascade, router: {mode: cascade, small: small, large: large, confidence: 0.88}}
`

// smallDir is quickDir with the first 24 tasks only: enough for a test of
// what crab run writes, not of what it measures.
func smallDir(t *testing.T) (dir, exp string) {
	t.Helper()
	dir, exp = quickDir(t)
	tunefixture.WriteTasks(t, filepath.Join(dir, "tasks.jsonl"), 24)
	small := strings.Replace(quickExperiment, "embedded:tasks.jsonl", "tasks.jsonl", 1)
	if err := os.WriteFile(exp, []byte(small), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, exp
}

// quickDir writes quickExperiment into a fresh directory and returns both.
func quickDir(t *testing.T) (dir, exp string) {
	t.Helper()
	dir = t.TempDir()
	exp = filepath.Join(dir, "quick.yaml")
	if err := os.WriteFile(exp, []byte(quickExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, exp
}

// quick is the one run of quickExperiment that the tests which only read
// a finished run share, rather than each running it again.
var quick struct {
	once                sync.Once
	dir, stdout, stderr string
	code                int
}

// quickRun returns a copy, in a fresh directory the test may change, of
// the run crab run -q --format json -e quick.yaml makes, and what that
// run printed (its summary.json).
func quickRun(t *testing.T) (dir, stdout string) {
	t.Helper()
	quick.once.Do(func() {
		exp := filepath.Join(shared, "quick.yaml")
		if err := os.WriteFile(exp, []byte(quickExperiment), 0o644); err != nil {
			quick.code, quick.stderr = -1, err.Error()
			return
		}
		quick.dir = filepath.Join(shared, "quick-run")
		quick.code, quick.stdout, quick.stderr = crab(t, "", "run", "-q", "-e", exp, "-o", quick.dir, "--format", "json")
	})
	if quick.code != 0 {
		t.Fatalf("the shared run of quick.yaml: exit %d; stderr %s", quick.code, quick.stderr)
	}
	dir = filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(dir, os.DirFS(quick.dir)); err != nil {
		t.Fatal(err)
	}
	return dir, quick.stdout
}
