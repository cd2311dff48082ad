package export

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
)

// The Parquet file carries the run metadata of the run directories it was
// exported from (read from their manifests) and the run ids of its
// records in its key-value metadata, as parquet-go reads it back; the
// graded fields are columns.
func TestParquetRunMetadata(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := filepath.Join(dir, "run1")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	man := eval.Manifest{RunID: "r1", CrabVersion: "v0.9.0+abc", Experiment: "experiment.yaml", ExperimentHash: "e5e5",
		Tasks: "fixtures/tasks.jsonl", TasksHash: "7a7a", ContractHash: "933e"}
	raw, err := json.Marshal(man)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, eval.ManifestFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	csvPath := filepath.Join(dir, "other.csv")
	if err := os.WriteFile(csvPath, []byte("arm,task_id,latency_ms,outcome,pass,cost\na,t1,1,ok,true,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	meta := RunMeta([]string{filepath.Join(run, records.RecordsFile), csvPath, "-", filepath.Join(dir, "missing")})

	recs := sample()
	recs[len(recs)-1].RunID = "r2" // a second run, without a manifest
	var buf bytes.Buffer
	if err := Write(&buf, "parquet", recs, WithMeta(meta)); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		MetaRunID: "r1,r2", MetaCrabVersion: "v0.9.0+abc", MetaExperiment: "experiment.yaml", MetaExperimentHash: "e5e5",
		MetaTasks: "fixtures/tasks.jsonl", MetaTasksHash: "7a7a", MetaContractHash: "933e",
	} {
		if got, ok := f.Lookup(key); !ok || got != want {
			t.Errorf("metadata %s = %q (present %v); want %q", key, got, ok, want)
		}
	}
	cols := map[string]bool{}
	for _, path := range f.Schema().Columns() {
		cols[path[0]] = true
	}
	for _, c := range []string{"correct", "pass", "grade_reason", "grade_error", "grade_cost", "grade_ms", "expected", "category",
		"similarity", "cache_origin", "false_hit", "shard"} {
		if !cols[c] {
			t.Errorf("no column %s", c)
		}
	}

	// Without metadata, only the records' run ids.
	buf.Reset()
	if err := Write(&buf, "parquet", recs); err != nil {
		t.Fatal(err)
	}
	f, err = parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.Lookup(MetaRunID); got != "r1,r2" {
		t.Errorf("run id without manifests %q; want r1,r2", got)
	}
	if _, ok := f.Lookup(MetaExperimentHash); ok {
		t.Errorf("an experiment hash without a manifest")
	}
}

// Runs adds each task's expected answer from the task file the manifest
// names, while that file is the one the run used; a changed file leaves
// the column NULL and says why in the metadata.
func TestParquetTaskExpected(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := filepath.Join(dir, "run1")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	tasks := []byte(`{"id":"t1","text":"refund?","tenant":"acme","permission":"agent","lang":"en","doc_version":"v1","expected":{"category":"billing","needs_human_review":false}}
{"id":"t2","text":"hello","tenant":"acme","permission":"agent","lang":"en","doc_version":"v1"}
`)
	if err := os.WriteFile(filepath.Join(dir, "tasks.jsonl"), tasks, 0o644); err != nil {
		t.Fatal(err)
	}
	man := eval.Manifest{RunID: "r1", Experiment: filepath.Join(dir, "experiment.yaml"), Tasks: "tasks.jsonl", TasksHash: eval.HashBytes(tasks)}
	raw, _ := json.Marshal(man)
	if err := os.WriteFile(filepath.Join(run, eval.ManifestFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	recs := []records.Record{
		{RunID: "r1", Arm: "a", TaskID: "t1", Outcome: records.OutcomeOK},
		{RunID: "r1", Arm: "a", TaskID: "t2", Outcome: records.OutcomeOK},
		{RunID: "r9", Arm: "a", TaskID: "t1", Outcome: records.OutcomeOK},
	}
	read := func() ([]Row, *parquet.File) {
		t.Helper()
		var buf bytes.Buffer
		if err := Write(&buf, "parquet", recs, Runs([]string{run})); err != nil {
			t.Fatal(err)
		}
		f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		r := parquet.NewGenericReader[Row](bytes.NewReader(buf.Bytes()))
		defer r.Close()
		rows := make([]Row, len(recs))
		if n, _ := r.Read(rows); n != len(recs) {
			t.Fatalf("read %d rows; want %d", n, len(recs))
		}
		return rows, f
	}
	rows, f := read()
	want := `{"category":"billing","needs_human_review":false}`
	if rows[0].TaskExpected == nil || *rows[0].TaskExpected != want {
		t.Errorf("t1 task_expected %v; want %s", rows[0].TaskExpected, want)
	}
	if rows[1].TaskExpected != nil || rows[2].TaskExpected != nil {
		t.Errorf("task_expected of a task without one, or of a run without a manifest: %v, %v; want NULL", rows[1].TaskExpected, rows[2].TaskExpected)
	}
	if got, _ := f.Lookup(MetaTaskExpected); got != "from tasks.jsonl" {
		t.Errorf("%s = %q; want from tasks.jsonl", MetaTaskExpected, got)
	}

	if err := os.WriteFile(filepath.Join(dir, "tasks.jsonl"), tasks[:len(tasks)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	rows, f = read()
	if rows[0].TaskExpected != nil {
		t.Errorf("task_expected from a task file changed since the run: %s; want NULL", *rows[0].TaskExpected)
	}
	if got, _ := f.Lookup(MetaTaskExpected); !strings.Contains(got, "changed since the run") {
		t.Errorf("%s = %q; want it to say the task file changed", MetaTaskExpected, got)
	}
}
