package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shardExperiment is the quick experiment without caches (shards do not
// share a cache, so cached arms' figures depend on the slicing).
func shardExperiment(t *testing.T) (dir, exp string) {
	t.Helper()
	dir = t.TempDir()
	var kept []string
	for _, l := range strings.Split(quickExperiment, "\n") {
		if !strings.Contains(l, "cache:") {
			kept = append(kept, l)
		}
	}
	exp = filepath.Join(dir, "quick.yaml")
	if err := os.WriteFile(exp, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, exp
}

type shardArm struct {
	Name      string         `json:"name"`
	N         int            `json:"n"`
	OK        int            `json:"ok"`
	Pass      int            `json:"pass"`
	Cost      float64        `json:"cost"`
	Outcomes  map[string]int `json:"outcomes"`
	Misroutes map[string]int `json:"misroutes"`
	Routed    int            `json:"routed"`
	Attempts  int            `json:"attempts"`
	Paired    *struct {
		Pairs  int      `json:"pairs"`
		Lost   []string `json:"lost"`
		Gained []string `json:"gained"`
	} `json:"paired"`
	Verdict string `json:"verdict"`
}

func shardSummary(t *testing.T, args ...string) []shardArm {
	t.Helper()
	code, stdout, errs := crab(t, "", append([]string{"report", "--format", "json"}, args...)...)
	if code != 0 && code != exitCheck {
		t.Fatalf("report %v: exit %d: %s", args, code, errs)
	}
	var s struct{ Arms []shardArm }
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("summary: %v", err)
	}
	return s.Arms
}

// Three shards merged report what one unsharded run reports on every
// figure that does not depend on timing.
func TestShardsMergeToOneRun(t *testing.T) {
	skipShort(t)
	t.Parallel()
	dir, exp := shardExperiment(t)
	whole := filepath.Join(dir, "whole")
	if code, _, errs := crab(t, "", "run", "-q", "-e", exp, "-o", whole); code != 0 && code != exitCheck {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	var shards []string
	for _, s := range []string{"0/3", "1/3", "2/3"} {
		out := filepath.Join(dir, "shard-"+s[:1])
		if code, _, errs := crab(t, "", "run", "-q", "-e", exp, "-o", out, "--shard", s); code != 0 && code != exitCheck {
			t.Fatalf("run --shard %s: exit %d: %s", s, code, errs)
		}
		shards = append(shards, out)
	}
	want, got := shardSummary(t, whole), shardSummary(t, shards...)
	if len(want) != len(got) || len(want) < 3 {
		t.Fatalf("%d arms merged; want %d", len(got), len(want))
	}
	if want[0].N == 0 || want[1].Paired == nil || want[1].Paired.Pairs == 0 || len(want[1].Misroutes) == 0 || want[1].Routed == 0 {
		t.Fatalf("the comparison is empty: %+v", want)
	}
	for i := range want {
		w, g := want[i], got[i]
		if math.Abs(w.Cost-g.Cost) > 1e-9*math.Max(1, w.Cost) {
			t.Errorf("%s: cost %v merged; want %v", w.Name, g.Cost, w.Cost)
		}
		w.Cost, g.Cost = 0, 0
		wj, _ := json.Marshal(w)
		gj, _ := json.Marshal(g)
		if string(wj) != string(gj) {
			t.Errorf("arm %d merged:\n got %s\nwant %s", i, gj, wj)
		}
	}
	// Bad sets of shards are bad input naming the directories.
	other := filepath.Join(dir, "other.yaml")
	raw, _ := os.ReadFile(exp)
	if err := os.WriteFile(other, []byte(strings.Replace(string(raw), "seed: 7", "seed: 8", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "foreign")
	if code, _, errs := crab(t, "", "run", "-q", "-e", other, "-o", foreign, "--shard", "2/3"); code != 0 && code != exitCheck {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing", shards[:2], "shards missing: 2/3"},
		{"twice", []string{shards[0], shards[1], shards[1]}, "are both shard 1/3"},
		{"mixed with a whole run", []string{shards[0], whole}, "is a shard and"},
		{"another experiment", []string{shards[0], shards[1], foreign}, "shards of different experiments"},
	} {
		code, _, errs := crab(t, "", append([]string{"report"}, tc.args...)...)
		if code != exitBadInput || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, %q; want %d and %q", tc.name, code, errs, exitBadInput, tc.want)
		}
	}
	for _, bad := range []string{"3/3", "-1/2", "a/b", "1/0", "1"} {
		out := filepath.Join(dir, "bad")
		code, _, errs := crab(t, "", "run", "-q", "-e", exp, "-o", out, "--shard", bad)
		if code != exitBadInput || !strings.Contains(errs, "--shard") {
			t.Errorf("--shard %s: exit %d, %q; want %d", bad, code, errs, exitBadInput)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("--shard %s: run directory written", bad)
		}
	}
}

// --start-at: a start already past is a warning and the schedule starts
// at once; a malformed one is exit 2 with nothing written. (That shards
// started apart send on one clock is TestRunnerStartAt in eval.)
func TestRunStartAtFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exp := filepath.Join(dir, "one.yaml")
	yaml := "name: one\ntasks: embedded:tasks.jsonl\ncontract: embedded:triage.schema.json\nseed: 3\nrepeats: 1\ntime_scale: 0\n" +
		"arrival: {pattern: burst}\nconcurrency: 16\ntimeout: 2s\nmodels:\n  - {name: large, kind: large}\narms:\n  - {name: baseline, model: large}\n"
	if err := os.WriteFile(exp, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	code, _, e := crab(t, "", "run", "-q", "-e", exp, "-o", filepath.Join(dir, "late"), "--shard", "0/2", "--start-at", past)
	if (code != 0 && code != exitCheck) || !strings.Contains(e, "--start-at "+past+" passed") {
		t.Errorf("a past --start-at: exit %d, %q; want a run and a warning that it passed", code, e)
	}
	for _, bad := range []string{"tomorrow", "2026-12-01 10:00", "10:00:00Z"} {
		out := filepath.Join(dir, "bad")
		code, _, e := crab(t, "", "run", "-q", "-e", exp, "-o", out, "--start-at", bad)
		if code != exitBadInput || !strings.Contains(e, "--start-at") {
			t.Errorf("--start-at %q: exit %d, %q; want %d naming --start-at", bad, code, e, exitBadInput)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("--start-at %q: run directory written", bad)
		}
	}
}
