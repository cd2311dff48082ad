package export

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
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

// RunMeta is the run metadata of the run directories among paths, read
// from their manifests (a records.jsonl path counts as the directory that
// holds it, when that has a manifest). Paths without one (interchange
// CSV, stdin) add nothing; the run ids of the records themselves are added
// by the writer.
func RunMeta(paths []string) Meta {
	m := Meta{}
	for _, p := range paths {
		dir := p
		if filepath.Base(p) == records.RecordsFile {
			dir = filepath.Dir(p)
		}
		man, err := eval.ReadManifest(dir)
		if err != nil {
			continue
		}
		for k, v := range map[string]string{
			MetaRunID: man.RunID, MetaCrabVersion: man.CrabVersion,
			MetaExperiment: man.Experiment, MetaExperimentHash: man.ExperimentHash,
			MetaTasks: man.Tasks, MetaTasksHash: man.TasksHash, MetaContractHash: man.ContractHash,
		} {
			m[k] = joinDistinct(m[k], v)
		}
	}
	return m
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

type options struct{ meta Meta }

// WithMeta gives the writer run metadata (see RunMeta) for the formats
// that carry it: Parquet's key-value metadata. CSV and JSONL have no place
// for it.
func WithMeta(m Meta) Option { return func(o *options) { o.meta = m } }
