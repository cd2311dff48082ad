package eval

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/grade"
	"github.com/crab-testbed/crab/stack"
)

// Manifest records everything needed to judge whether two runs did the same
// work and to re-run one: inputs and their hashes, seeds, schedule, limits,
// models and prices, versions and machine, and whether the run finished.
type Manifest struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"` // running, finished, interrupted, incomplete
	// StatusReason says why a run is incomplete (e.g. the disk filled up
	// while its records were written).
	StatusReason string    `json:"status_reason,omitempty"`
	StartedAt    time.Time `json:"started_at"`
	EndedAt      time.Time `json:"ended_at,omitzero"`

	CrabVersion string            `json:"crab_version"`
	GoVersion   string            `json:"go_version"`
	Modules     map[string]string `json:"modules,omitempty"`
	OS          string            `json:"os"`
	Arch        string            `json:"arch"`
	CPUModel    string            `json:"cpu_model,omitempty"`
	CPUs        int               `json:"cpus"`
	Hostname    string            `json:"hostname,omitempty"`

	Experiment     string `json:"experiment"`
	ExperimentHash string `json:"experiment_hash"`
	// Shard is "I/N" for a run of one slice of the schedule (crab run
	// --shard); crab report merges the N shards of one experiment.
	Shard string `json:"shard,omitempty"`
	// StartAt is the wall-clock start the shards' schedules shared (crab
	// run --start-at), RFC 3339.
	StartAt      string `json:"start_at,omitempty"`
	Tasks        string `json:"tasks"`
	TasksHash    string `json:"tasks_hash"`
	TaskCount    int    `json:"task_count"`
	Contract     string `json:"contract"`
	ContractHash string `json:"contract_hash"`

	Seed        int64               `json:"seed"`
	Seeds       []int64             `json:"seeds"` // per repeat
	Repeats     int                 `json:"repeats"`
	Warmup      int                 `json:"warmup"`
	TimeScale   float64             `json:"time_scale"`
	Arrival     Arrival             `json:"arrival"`
	Concurrency int                 `json:"concurrency"`
	MaxInFlight int                 `json:"max_in_flight,omitempty"`
	Order       string              `json:"order"`             // how arms shared the schedule: switchback, paired or sequential
	Block       stack.Duration      `json:"block,omitempty"`   // switchback: schedule time per block
	BurnIn      stack.Duration      `json:"burn_in,omitempty"` // switchback: start of every block left out of the latency comparison
	Timeout     stack.Duration      `json:"timeout"`
	Retry       stack.RetrySpec     `json:"retry"`
	Gate        analysis.GateConfig `json:"gate"`
	// Grade is the experiment's grade section (absent: the default rule)
	// and PassRule the pass rule in force, in words, as the report states it.
	Grade    *grade.Config `json:"grade,omitempty"`
	PassRule string        `json:"pass_rule,omitempty"`
	// Proof is the experiment's proof section, read by crab check --run.
	Proof *ProofSpec `json:"proof,omitempty"`
	// Holdout says which tasks of the task file were left out because
	// tuned values were fitted on them (the experiment's fitted section).
	Holdout *Holdout          `json:"holdout,omitempty"`
	Shadow  bool              `json:"shadow"`
	Models  []stack.ModelSpec `json:"models"`
	Arms    []stack.ArmSpec   `json:"arms"`

	// Recording is the recording of this run's model calls (crab run
	// with record: true), relative to the run directory; empty when
	// recording was off. RecordedCalls is how many calls it holds.
	Recording     string `json:"recording,omitempty"`
	RecordedCalls int    `json:"recorded_calls,omitempty"`
	// Replays are the models that answered from a recording, and
	// NotRecorded the requests a recording could not answer (each an
	// error record, "replay: not recorded").
	Replays     []ReplaySource `json:"replays,omitempty"`
	NotRecorded int            `json:"not_recorded,omitempty"`

	Passes []PassMetrics `json:"passes,omitempty"`
}

// NewManifest fills a manifest from an experiment and its resolved inputs.
func NewManifest(runID string, e *Experiment, tasksName, tasksHash string, nTasks int, contractName, contractHash string) *Manifest {
	m := &Manifest{
		RunID: runID, Status: "running", StartedAt: time.Now().UTC(),
		CrabVersion: "dev", GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPUModel: cpuModel(), CPUs: runtime.NumCPU(),
		Experiment: e.File, ExperimentHash: e.Hash,
		Tasks: tasksName, TasksHash: tasksHash, TaskCount: nTasks,
		Contract: contractName, ContractHash: contractHash,
		Seed: e.Seed, Repeats: e.Repeats, Warmup: e.Warmup, TimeScale: *e.TimeScale,
		Arrival: e.Arrival, Concurrency: e.Concurrency, MaxInFlight: e.MaxInFlight, Order: e.Order, Block: e.Block, BurnIn: e.BurnIn, Timeout: e.Timeout, Retry: e.Retry, Gate: e.Gate.Defaults(),
		Shadow: *e.Shadow, Models: e.Models, Arms: e.Arms,
	}
	m.Hostname, _ = os.Hostname()
	for r := 0; r < e.Repeats; r++ {
		m.Seeds = append(m.Seeds, e.Seed+int64(r))
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			m.CrabVersion = v
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				m.CrabVersion += "+" + s.Value
			}
		}
		m.Modules = map[string]string{}
		for _, d := range bi.Deps {
			m.Modules[d.Path] = d.Version
		}
	}
	return m
}

// HashBytes is the hex sha256 used for every input hash in a manifest.
func HashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// ManifestFile is the name of the manifest inside a run directory.
const ManifestFile = "manifest.json"

// ReadManifest reads the manifest of a run directory. A directory without
// one (e.g. records gathered elsewhere) is fs.ErrNotExist.
func ReadManifest(dir string) (*Manifest, error) {
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return &m, nil
}

// StatusIncomplete is the status of a run that ended early on a fault of
// its own machine (Manifest.StatusReason says which), e.g. a full disk,
// or one on which crab itself failed some requests (a bug, recovered):
// neither is ground for a verdict.
const StatusIncomplete = "incomplete"

// IncompleteNote is what the summary says of an incomplete run in dir.
func IncompleteNote(dir, reason string) string {
	return "the run in " + dir + " is incomplete: " + reason
}

// StoreErrors sums, by arm, the cache store calls that failed over a
// run's passes (PassMetrics.Metrics.store.errors), whether the metrics are
// a pass's own (crab run) or read back from manifest.json; arms without a
// failure are left out.
func StoreErrors(passes []PassMetrics) map[string]int {
	out := map[string]int{}
	for _, p := range passes {
		raw, err := json.Marshal(p.Metrics)
		if err != nil {
			continue
		}
		var m struct {
			Store struct {
				Errors int `json:"errors"`
			} `json:"store"`
		}
		if json.Unmarshal(raw, &m) == nil && m.Store.Errors > 0 {
			out[p.Arm] += m.Store.Errors
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
