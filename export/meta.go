package export

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/fixtures"
)

// Meta is run metadata for a file's own metadata (the key-value metadata
// of a Parquet file's footer): key to value, several runs' distinct
// values joined by commas in the order the inputs name them.
type Meta map[string]string

// The keys of Meta, as a Parquet file carries them.
const (
	MetaRunID          = "crab.run_id"          // the records' run ids
	MetaCrabVersion    = "crab.crab_version"    // the crab that made the runs (the manifest's crab_version)
	MetaExperiment     = "crab.experiment"      // the experiment file
	MetaExperimentHash = "crab.experiment_hash" // its sha256
	MetaTasks          = "crab.tasks"           // the task file
	MetaTasksHash      = "crab.tasks_hash"      // its sha256
	MetaContractHash   = "crab.contract_hash"   // the contract's hash
)

// MetaTaskExpected says where the task_expected column comes from: the
// task files read, or why a run's could not be.
const MetaTaskExpected = "crab.task_expected"

// RunMeta is the run metadata of the run directories among paths, read
// from their manifests (a records.jsonl path counts as the directory that
// holds it, when that has a manifest). Paths without one (interchange
// CSV, stdin) add nothing; the run ids of the records themselves are added
// by the writer.
func RunMeta(paths []string) Meta {
	m := Meta{}
	for _, man := range manifests(paths) {
		addManifest(m, man)
	}
	return m
}

// Runs gives the writer what the run directories among paths say about
// their runs: RunMeta's metadata, and each task's expected answer for the
// task_expected column, read from the task file a run's manifest names
// (relative to its experiment file, as crab run read it) and only when
// that file is still the one the run used (its sha256 is the manifest's
// tasks_hash). MetaTaskExpected names the files read, or why a run's
// expected answers are NULL.
func Runs(paths []string) Option {
	meta, byRun := Meta{}, map[string]map[string]string{}
	byHash := map[string]map[string]string{}
	var notes []string
	for _, man := range manifests(paths) {
		addManifest(meta, man)
		exp, ok := byHash[man.TasksHash]
		if !ok {
			var note string
			exp, note = taskExpected(man)
			byHash[man.TasksHash] = exp
			if !slices.Contains(notes, note) {
				notes = append(notes, note)
			}
		}
		if exp != nil {
			byRun[man.RunID] = exp
		}
	}
	if len(notes) > 0 {
		meta[MetaTaskExpected] = strings.Join(notes, "; ")
	}
	return func(o *options) { o.meta, o.expected = meta, byRun }
}

// manifests are the manifests of the run directories among paths.
func manifests(paths []string) []*eval.Manifest {
	var out []*eval.Manifest
	for _, p := range paths {
		dir := p
		if filepath.Base(p) == records.RecordsFile {
			dir = filepath.Dir(p)
		}
		if man, err := eval.ReadManifest(dir); err == nil {
			out = append(out, man)
		}
	}
	return out
}

func addManifest(m Meta, man *eval.Manifest) {
	for k, v := range map[string]string{
		MetaRunID: man.RunID, MetaCrabVersion: man.CrabVersion,
		MetaExperiment: man.Experiment, MetaExperimentHash: man.ExperimentHash,
		MetaTasks: man.Tasks, MetaTasksHash: man.TasksHash, MetaContractHash: man.ContractHash,
	} {
		m[k] = joinDistinct(m[k], v)
	}
}

// taskExpected is each task's expected answer (JSON) in the task file of
// man's run, or nil and why not.
func taskExpected(man *eval.Manifest) (map[string]string, string) {
	base := ""
	if man.Experiment != "" && !strings.HasPrefix(man.Experiment, "embedded:") {
		base = filepath.Dir(man.Experiment)
	}
	raw, err := eval.ReadRef(man.Tasks, base, fixtures.FS)
	if err != nil {
		return nil, "run " + man.RunID + ": " + err.Error()
	}
	if eval.HashBytes(raw) != man.TasksHash {
		return nil, "run " + man.RunID + ": " + man.Tasks + " changed since the run (its sha256 is not the manifest's tasks_hash)"
	}
	tasks, err := eval.ReadTasks(bytes.NewReader(raw), man.Tasks)
	if err != nil {
		return nil, "run " + man.RunID + ": " + err.Error()
	}
	out := map[string]string{}
	for id, e := range eval.ExpectedByID(tasks) {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, "run " + man.RunID + ": task " + id + ": " + err.Error()
		}
		out[id] = string(b)
	}
	return out, "from " + man.Tasks
}

// joinDistinct adds each of vs not yet in the comma-joined list to it.
func joinDistinct(list string, vs ...string) string {
	have := []string{}
	if list != "" {
		have = strings.Split(list, ",")
	}
	for _, v := range vs {
		if v != "" && !slices.Contains(have, v) {
			have = append(have, v)
		}
	}
	return strings.Join(have, ",")
}

// Option sets how NewWriter writes.
type Option func(*options)

type options struct {
	meta     Meta
	expected map[string]map[string]string // run id, task id: expected answer (JSON)
	// someUnmeasured: some records to come lack a figure (see
	// SomeUnmeasured).
	someUnmeasured bool
}

// SomeUnmeasured tells the writer that some of the records to come do not
// measure every figure (records.Record.Unmeasured), even if the first one
// does: a CSV header then has the unmeasured column from its first line,
// as a CSV header cannot grow a column later. Write finds this out by
// itself; a caller writing records one at a time tells it.
func SomeUnmeasured(yes bool) Option { return func(o *options) { o.someUnmeasured = yes } }

// WithMeta gives the writer run metadata (see RunMeta) for the formats
// that carry it: Parquet's key-value metadata. CSV and JSONL have no place
// for it.
func WithMeta(m Meta) Option { return func(o *options) { o.meta = m } }
