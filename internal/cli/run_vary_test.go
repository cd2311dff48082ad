package cli

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/internal/varydouble"
)

// varyDecision is what an end-to-end run against the varying double
// decided, and the run directory.
type varyDecision struct {
	Verdicts      map[string]string
	Miscalibrated string
	Reasons       map[string][]string
	Dir           string
}

// runVary runs the Standard double's experiment with tasks tasks and
// repeats repeats, and returns its decision.
func runVary(t *testing.T, seed int64, tasks, repeats int) varyDecision {
	t.Helper()
	srv := httptest.NewServer(varydouble.New(varydouble.Standard(seed)))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tasks.jsonl"), []byte(varydouble.Tasks(tasks)), 0o644)
	os.WriteFile(filepath.Join(dir, "answer.schema.json"), []byte(varydouble.Contract), 0o644)
	exp := filepath.Join(dir, "exp.yaml")
	os.WriteFile(exp, []byte(varydouble.Experiment(srv.URL+"/v1", seed, repeats)), 0o644)
	out := filepath.Join(dir, "out")
	if code, _, errs := crab(t, "", "run", "-e", exp, "-o", out, "-q"); code != 0 && code != 1 {
		t.Fatalf("run: exit %d (stderr %s)", code, errs)
	}
	var s struct {
		Arms []struct {
			Name    string   `json:"name"`
			Verdict string   `json:"verdict"`
			Reasons []string `json:"reasons"`
		} `json:"arms"`
		Decision struct {
			Miscalibrated string `json:"miscalibrated"`
		} `json:"decision"`
	}
	readJSON(t, filepath.Join(out, "summary.json"), &s)
	d := varyDecision{Verdicts: map[string]string{}, Reasons: map[string][]string{}, Miscalibrated: s.Decision.Miscalibrated, Dir: out}
	for _, a := range s.Arms {
		d.Verdicts[a.Name], d.Reasons[a.Name] = a.Verdict, a.Reasons
	}
	return d
}

// Against a backend whose answers vary from call to call (10% of tasks
// flip with probability 0.5 on each call): a pilot of 100 tasks × 2
// repeats, crab plan on it, and a run of the size it gives at 3 repeats.
// In that run the identical twin is neither accepted nor rejected, the
// equal-quality faster candidate is never rejected, and the one 6 points
// worse is never accepted. bench/vary.sh counts the rates over many seeds.
func TestVaryingBackendEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("a few thousand calls to a loopback double: go test -run TestVaryingBackendEndToEnd ./internal/cli/")
	}
	t.Parallel()
	pilot := runVary(t, 1, 100, 2)
	code, out, errs := crab(t, "", "plan", "--format", "json", "--repeats", "3", pilot.Dir)
	if code != 0 {
		t.Fatalf("plan: exit %d (stderr %s)", code, errs)
	}
	var p struct {
		Noise        float64 `json:"noise"`
		PerCandidate []struct {
			Name     string `json:"name"`
			PointsTo string `json:"points_to"`
		} `json:"per_candidate"`
		Rows []struct {
			Tasks *int `json:"tasks"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil || len(p.Rows) != 1 || p.Rows[0].Tasks == nil {
		t.Fatalf("plan: %v; output %s", err, out)
	}
	tasks := *p.Rows[0].Tasks
	t.Logf("pilot: noise floor %.3f, points to %+v; plan: %d tasks × 3 repeats", p.Noise, p.PerCandidate, tasks)
	// 10% of tasks flipping with probability 0.5: 5% of identical calls
	// disagree, which the pilot's repeats and twin measure.
	if p.Noise < 0.02 || p.Noise > 0.09 || tasks < 200 || tasks > 800 {
		t.Fatalf("plan: noise %.3f, %d tasks; want about 0.05 and a few hundred tasks", p.Noise, tasks)
	}
	d := runVary(t, 2, tasks, 3)
	t.Logf("verdicts %v; miscalibrated %q", d.Verdicts, d.Miscalibrated)
	if v := d.Verdicts["twin"]; v == "accept" || v == "reject" {
		t.Errorf("twin: %s (%s); want neither accept nor reject", v, strings.Join(d.Reasons["twin"], "; "))
	}
	// At the planned size each is decided with about the planned power
	// (80%), so one run may leave either inconclusive: what must hold in
	// every run is that neither is decided the wrong way. bench/vary.sh
	// counts how often each is decided over many seeds.
	if v := d.Verdicts["faster"]; v != "accept" && v != "inconclusive" {
		t.Errorf("faster: %s (%s); want accept, or inconclusive at the plan's power", v, strings.Join(d.Reasons["faster"], "; "))
	}
	if v := d.Verdicts["worse"]; v != "reject" && v != "inconclusive" {
		t.Errorf("worse: %s (%s); want reject, or inconclusive at the plan's power", v, strings.Join(d.Reasons["worse"], "; "))
	}
}
