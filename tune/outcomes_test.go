package tune

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/internal/tunefixture"
	"github.com/crab-testbed/crab/router"
	"github.com/crab-testbed/crab/stack"
)

func tuneDir(t *testing.T, n int, extraArms string) string { return tunefixture.Dir(t, n, extraArms) }

func TestOutcomeTableBuildReadRebuild(t *testing.T) {
	t.Parallel()
	exp := tuneDir(t, 60, "")
	s, err := loadTuner(exp, fixtures.FS)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := s.Target()
	if err != nil {
		t.Fatal(err)
	}
	if tg.Small != "small" || tg.Large != "large" || tg.From != "router" {
		t.Fatalf("target %+v; want small/large from arm router", tg)
	}
	ctx := context.Background()
	first, err := s.OutcomeTableFor(ctx, tg, TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Built || len(first.Table.Rows) != 120 {
		t.Fatalf("built %v with %d rows; want built, 120 rows", first.Built, len(first.Table.Rows))
	}
	if dir, base := filepath.Split(first.Path); dir != filepath.Dir(exp)+string(filepath.Separator) || !strings.HasPrefix(base, "tasks.jsonl.outcomes-") {
		t.Errorf("table at %s; want beside the task file", first.Path)
	}
	second, err := s.OutcomeTableFor(ctx, tg, TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if second.Built || !reflect.DeepEqual(second.Table.Rows, first.Table.Rows) {
		t.Errorf("second call built %v; want the stored table read back unchanged", second.Built)
	}
	refreshed, err := s.OutcomeTableFor(ctx, tg, TableOptions{Refresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if !refreshed.Built || !reflect.DeepEqual(refreshed.Table.Rows, first.Table.Rows) {
		t.Errorf("refresh built %v; want rebuilt with the same (deterministic) outcomes", refreshed.Built)
	}
	// Another price is another model config: another key, another file.
	raw, _ := os.ReadFile(exp)
	other := filepath.Join(filepath.Dir(exp), "other.yaml")
	os.WriteFile(other, bytes.Replace(raw, []byte("price_out_per_mtok: 10"), []byte("price_out_per_mtok: 12"), 1), 0o644)
	s2, err := loadTuner(other, fixtures.FS)
	if err != nil {
		t.Fatal(err)
	}
	third, err := s2.OutcomeTableFor(ctx, tg, TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !third.Built || third.Path == first.Path || third.Table.Header.Key == first.Table.Header.Key {
		t.Errorf("changed price: built %v at %s (key %s); want a new table beside the old", third.Built, third.Path, third.Table.Header.Key[:12])
	}
	// A table file holding another key is rebuilt, not misread.
	stale := filepath.Join(t.TempDir(), "stale.jsonl")
	os.WriteFile(stale, mustRead(t, third.Path), 0o644)
	got, err := s.OutcomeTableFor(ctx, tg, TableOptions{Path: stale})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Built || !strings.Contains(got.Reason, "other tasks or models") {
		t.Errorf("stale table: built %v (%s); want rebuilt", got.Built, got.Reason)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The table's verdict on each task is the one `crab run` reaches on repeat
// 0 with the same models: a replay predicts the run.
func TestOutcomeTableMatchesRun(t *testing.T) {
	t.Parallel()
	exp, s, _, tab := builtTable(t, 60)
	var mu sync.Mutex
	pass := map[string]bool{}
	cost := map[string]float64{}
	rs, _ := loadTuner(exp, fixtures.FS)
	_, err := rs.Runner("tune-check", func(r records.Record) error {
		mu.Lock()
		defer mu.Unlock()
		pass[r.Arm+"/"+r.TaskID] = r.Pass
		cost[r.Arm+"/"+r.TaskID] = r.Cost
		return nil
	}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	arm := map[string]string{"small": "small_only", "large": "baseline"}
	for _, row := range tab.Table.Rows {
		k := arm[row.Role] + "/" + row.TaskID
		if pass[k] != row.Pass || cost[k] != float64(row.Cost) {
			t.Errorf("%s: table pass %v cost %v; run pass %v cost %v", k, row.Pass, row.Cost, pass[k], cost[k])
		}
	}
	samples, err := s.Samples(tab.Table, nil, tab.Path)
	if err != nil {
		t.Fatal(err)
	}
	// The router arm at 0.5 replayed from the table matches its run too.
	for _, x := range samples {
		want := x.Small.Pass
		if x.Score >= 0.5 {
			want = x.Large.Pass
		}
		if got := pass["router/"+x.ID]; got != want {
			t.Errorf("router/%s (score %.3f): run pass %v; replay %v", x.ID, x.Score, got, want)
		}
	}
}

func TestReadOutcomeTableErrors(t *testing.T) {
	t.Parallel()
	header := `{"format":"crab.outcomes/v2","key":"k","tasks":"t","tasks_hash":"h","task_count":1,"contract_hash":"c","seed":1,"small":{"name":"s","config_hash":"a"},"large":{"name":"l","config_hash":"b"},"mode":"full","latency":"x","created":"2025-01-01T00:00:00Z"}`
	for _, tc := range []struct {
		name, body string
		line       int
		field      string
	}{
		{"empty", "", 0, ""},
		{"old format", strings.Replace(header, "crab.outcomes/v2", "crab.outcomes/v0", 1), 1, "format"},
		{"bad json", header + "\n{not json\n", 2, ""},
		{"unknown field", header + "\n{\"task_id\":\"t1\",\"role\":\"small\",\"colour\":1}\n", 2, "colour"},
		{"bad role", header + "\n{\"task_id\":\"t1\",\"role\":\"medium\"}\n", 2, "role"},
		{"bad type", header + "\n{\"task_id\":\"t1\",\"role\":\"small\",\"cost\":\"cheap\"}\n", 2, "cost"},
	} {
		_, err := ReadOutcomeTable(strings.NewReader(tc.body), "table.jsonl")
		var ie *records.InputError
		if !errors.As(err, &ie) || ie.Line != tc.line || ie.Field != tc.field || ie.File != "table.jsonl" {
			t.Errorf("%s: got %v; want a records.InputError at line %d field %q", tc.name, err, tc.line, tc.field)
		}
	}
}

func TestTunedExperiment(t *testing.T) {
	t.Parallel()
	exp := tuneDir(t, 90, "  - {name: short_router, mode: short, router: {threshold: 0.5, small: small, large: large}}\n")
	s, err := loadTuner(exp, fixtures.FS)
	if err != nil {
		t.Fatal(err)
	}
	tg, _ := s.Target()
	tab, err := s.OutcomeTableFor(context.Background(), tg, TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	samples, err := s.Samples(tab.Table, nil, tab.Path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Router(samples, Config{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.TunedExperiment(tg, rep, 3, "", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	// The snippet runs from anywhere: parse it from another directory.
	moved := filepath.Join(t.TempDir(), "tuned.yaml")
	os.WriteFile(moved, out, 0o644)
	s2, err := loadTuner(moved, fixtures.FS)
	if err != nil {
		t.Fatalf("tuned experiment does not load: %v\n%s", err, out)
	}
	arms := map[string]*stack.RouterSpec{}
	for _, a := range s2.Exp.Arms {
		arms[a.Name] = a.Router
	}
	if r := arms["router"]; r == nil || r.Threshold != rep.Threshold {
		t.Errorf("router arm %+v; want threshold %v", r, rep.Threshold)
	}
	if r := arms["short_router"]; r == nil || r.Threshold != 0.5 {
		t.Errorf("short_router arm %+v; want its threshold untouched (other request settings)", r)
	}
	if r := arms["cascade"]; r == nil || r.Mode != router.PolicyCascade || r.Confidence != rep.Cascade.Threshold {
		t.Errorf("cascade arm %+v; want confidence %v", r, rep.Cascade.Threshold)
	}
	if len(s2.Tasks) != 90 || !strings.Contains(string(out), "chosen by crab tune") {
		t.Errorf("tuned experiment: %d tasks; want 90 and a note on the tuned values:\n%s", len(s2.Tasks), out)
	}
}

func TestTargetWithoutRouter(t *testing.T) {
	t.Parallel()
	exp := tuneDir(t, 5, "")
	raw := mustRead(t, exp)
	i := bytes.Index(raw, []byte("  - {name: router"))
	os.WriteFile(exp, raw[:i], 0o644)
	s, err := loadTuner(exp, fixtures.FS)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := s.Target()
	if err != nil || tg.Small != "small" || tg.Large != "large" || tg.From != "" {
		t.Errorf("got %+v, %v; want the small and large kinds", tg, err)
	}
}

// FuzzReadOutcomeTable: any bytes give a table or an *records.InputError, never a
// panic.
func FuzzReadOutcomeTable(f *testing.F) {
	f.Add([]byte(`{"format":"crab.outcomes/v2","key":"k"}` + "\n" + `{"task_id":"t1","role":"small","outcome":"ok","pass":true,"cost":0.1}` + "\n"))
	f.Add([]byte("{}\n{}\n"))
	f.Add([]byte("\n\n{\"format\":1}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := ReadOutcomeTable(bytes.NewReader(b), "fuzz.jsonl")
		var ie *records.InputError
		if err != nil && !errors.As(err, &ie) {
			t.Fatalf("error %v is not a records.InputError", err)
		}
		if err == nil && tab == nil {
			t.Fatal("nil table without an error")
		}
	})
}

// builtTable is a fixture experiment of n tasks, its tuner and target,
// and the outcome table built for them.
func builtTable(t *testing.T, n int) (exp string, s *Tuner, tg Target, tab *TableResult) {
	t.Helper()
	exp = tuneDir(t, n, "")
	s, err := loadTuner(exp, fixtures.FS)
	if err != nil {
		t.Fatal(err)
	}
	if tg, err = s.Target(); err != nil {
		t.Fatal(err)
	}
	if tab, err = s.OutcomeTableFor(context.Background(), tg, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	return exp, s, tg, tab
}

// loadTuner is a tuner of the experiment at path, read as LoadSetup reads it.
func loadTuner(path string, embedded fs.FS) (*Tuner, error) {
	s, err := eval.LoadSetup(path, embedded)
	if err != nil {
		return nil, err
	}
	return New(s), nil
}
