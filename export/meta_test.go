package export

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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
