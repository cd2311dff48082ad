package contract

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/internal/splitmix"
)

// world draws the answers of a run whose answers vary: over n tasks, a
// share of tasks varies, and each call of a varying task answers the
// wrong category with probability flip. A shortening that changes a
// decision on its own does so on a share effect of the tasks.
type world struct {
	n                   int
	share, flip, effect float64
	repeats             int
}

// sides draws the full, short and twin sides from seed.
func (w world) sides(t testing.TB, seed uint64) (full, short, twin *ProofSide) {
	g := splitmix.New(seed)
	full = &ProofSide{Label: "baseline", Source: "run"}
	short = &ProofSide{Label: "short", Source: "run"}
	twin = &ProofSide{Label: "twin", Source: "run"}
	right, wrong := render(t, fullFields(), nil), render(t, fullFields(), func(m map[string]any) { m["category"] = "billing" })
	sRight, sWrong := render(t, shortFields(), nil), render(t, shortFields(), func(m map[string]any) { m["category"] = "billing" })
	for i := 0; i < w.n; i++ {
		id := fmt.Sprintf("t%04d", i)
		varies := g.Float64() < w.share
		changed := g.Float64() < w.effect
		for r := 0; r < max(w.repeats, 1); r++ {
			call := func(ok, bad string) *Answer {
				if varies && g.Float64() < w.flip {
					return delivered(bad)
				}
				return delivered(ok)
			}
			full.Answers = append(full.Answers, SideAnswer{Task: id, Repeat: r, Answer: call(right, wrong)})
			twin.Answers = append(twin.Answers, SideAnswer{Task: id, Repeat: r, Answer: call(right, wrong)})
			s := call(sRight, sWrong)
			if changed {
				s = delivered(sWrong)
			}
			short.Answers = append(short.Answers, SideAnswer{Task: id, Repeat: r, Answer: s})
		}
	}
	return full, short, twin
}

// failedRuns proves runs worlds drawn from seeds from, each against its
// twin, and counts the proofs that are not OK.
func (w world) failedRuns(t testing.TB, c *Contract, from uint64, runs int) int {
	failed := 0
	for seed := from; seed < from+uint64(runs); seed++ {
		full, short, twin := w.sides(t, seed)
		if p := c.ProveVarying(full, short, nil, triageProof(), Variation{Varies: true, Why: "w", Twin: twin}); !p.OK {
			failed++
		}
	}
	return failed
}

func proofText(t *testing.T, p *Proof) string {
	t.Helper()
	var b strings.Builder
	if err := p.WriteText(&b, ProofText{ContractName: "triage.schema.json", TicketNote: "from tasks", MaxListed: 0}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func wantLines(t *testing.T, text string, lines ...string) {
	t.Helper()
	for _, w := range lines {
		if !strings.Contains(text, w) {
			t.Errorf("text lacks %q:\n%s", w, text)
		}
	}
}

// Answers that do not vary keep the exact proof: same tasks, same text,
// same JSON, whatever twin is given.
func TestProveVaryingDeterministicIsExact(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	full, short, twin := world{n: 60, share: 0.2, flip: 0.5}.sides(t, 1)
	want := c.ProveSides(full, short, nil, triageProof())
	got := c.ProveVarying(full, short, nil, triageProof(), Variation{Twin: twin})
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if string(wj) != string(gj) {
		t.Errorf("JSON differs:\n got %s\nwant %s", gj, wj)
	}
	if w, g := proofText(t, want), proofText(t, got); w != g {
		t.Errorf("text differs:\n got %s\nwant %s", g, w)
	}
	if got.OK || got.Fail == 0 || strings.Contains(string(gj), `"noise"`) {
		t.Errorf("got OK %v, %d failed, JSON %s; want the exact proof's failures and no noise section", got.OK, got.Fail, gj)
	}
}

// Varying answers with no noise floor: tasks that differ leave the proof
// unable to tell, never a pass, naming what would tell.
func TestProveVaryingWithoutNoiseFloorCannotTell(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	full, short, _ := world{n: 200, share: 0.1, flip: 0.5}.sides(t, 2)
	p := c.ProveVarying(full, short, nil, triageProof(), Variation{Varies: true, Why: "model large varies (share 0.1, flip 0.5)"})
	if p.OK || p.Fail != 0 || p.Differs == 0 || p.Noise.Verdict != NoiseCannotTell || p.Noise.P != nil {
		t.Fatalf("got OK %v, fail %d, differs %d, noise %+v; want cannot tell", p.OK, p.Fail, p.Differs, p.Noise)
	}
	text := proofText(t, p)
	wantLines(t, text,
		"\nDIFFERS t",
		"answers vary from call to call: model large varies (share 0.1, flip 0.5)\n",
		"noise floor: not measured (no twin of baseline, no repeats of it)",
		fmt.Sprintf("tasks: %d proven, 0 failed, %d differ, 0 not compared (of 200)\n", p.Pass, p.Differs),
		"verdict: CANNOT TELL: ",
		"a twin of baseline (control: twin) or repeats of it (repeats: 2 or more) would\n",
	)
	if f := p.Failure(); !strings.Contains(f, "cannot tell for short") || !strings.Contains(f, "control: twin") {
		t.Errorf("Failure() = %q; want it to say the proof cannot tell and name a twin", f)
	}
}

// With a twin, a shortening that changes nothing passes within the noise
// floor, listing the tasks that differ by where they stand; one that
// changes decisions on 10% of tasks fails beyond it.
func TestProveVaryingAgainstTwin(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	full, short, twin := world{n: 480, share: 0.1, flip: 0.5}.sides(t, 3)
	p := c.ProveVarying(full, short, nil, triageProof(), Variation{Varies: true, Why: "w", Twin: twin})
	n := p.Noise
	if !p.OK || n.Verdict != NoiseWithinFloor || n.Source != NoiseSourceTwin || n.Units != 480 || p.Differs == 0 {
		t.Fatalf("got OK %v, differs %d, noise %+v; want a pass within the noise floor over 480 units", p.OK, p.Differs, n)
	}
	if len(n.Within)+len(n.Beyond) != p.Differs || len(n.Within) == 0 {
		t.Errorf("within %v, beyond %v; want every one of %d differing tasks listed, some within", n.Within, n.Beyond, p.Differs)
	}
	text := proofText(t, p)
	wantLines(t, text,
		"\nDIFFERS WITHIN NOISE t",
		fmt.Sprintf("noise floor (twin, an identical copy of baseline): %d of 480 tasks differ between identical calls", n.NoiseDiffer),
		fmt.Sprintf("test: exact one-sided sign test over the %d tasks where only one of short and twin differs from baseline (short only %d, twin only %d): p %s; the proof fails when p < 0.05, so a shortening that changes nothing fails in at most 5%% of runs\n",
			n.ShortOnly+n.NoiseOnly, n.ShortOnly, n.NoiseOnly, formatP(*n.P)),
		fmt.Sprintf("%d differ (%d within noise, %d beyond)", p.Differs, len(n.Within), len(n.Beyond)),
		"verdict: PASS: ",
	)
	if p.Failure() != "" {
		t.Errorf("Failure() = %q; want none", p.Failure())
	}

	full, short, twin = world{n: 480, share: 0.1, flip: 0.5, effect: 0.1}.sides(t, 3)
	p = c.ProveVarying(full, short, nil, triageProof(), Variation{Varies: true, Why: "w", Twin: twin})
	n = p.Noise
	if p.OK || n.Verdict != NoiseBeyondFloor || *n.P >= 0.05 || len(n.Beyond) == 0 {
		t.Fatalf("got OK %v, noise %+v; want a failure beyond the noise floor", p.OK, n)
	}
	text = proofText(t, p)
	wantLines(t, text, "\nDIFFERS BEYOND NOISE t", "verdict: FAIL: short differs from baseline on more tasks than identical calls do, beyond chance (")
	if f := p.Failure(); !strings.Contains(f, "shortening proof failed for short: differs on ") {
		t.Errorf("Failure() = %q; want the test's figures", f)
	}
}

// A field the short answer drops fails outright, whatever the noise floor.
func TestProveVaryingDroppedFieldFailsOutright(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	full, short, twin := world{n: 100, share: 0.1, flip: 0.5}.sides(t, 4)
	short.Answers[7].Answer = delivered(render(t, shortFields(), func(m map[string]any) { m["reason"] = " " }))
	short.Answers[9].Answer = &Answer{Status: StatusContractFail, Violations: []string{`/evidence: required: missing required property "evidence"`}}
	p := c.ProveVarying(full, short, nil, triageProof(), Variation{Varies: true, Why: "w", Twin: twin})
	if p.OK || p.Fail != 2 || p.Tasks[7].Verdict != ProofFail || p.Tasks[9].Verdict != ProofFail {
		t.Fatalf("got OK %v, %d failed (t0007 %s, t0009 %s); want both to fail outright", p.OK, p.Fail, p.Tasks[7].Verdict, p.Tasks[9].Verdict)
	}
	wantLines(t, proofText(t, p), "FAIL t0007: dropped reason", "FAIL t0009: dropped evidence", "verdict: FAIL: 2 of 100 tasks fail the proof\n")
}

// Repeats of the full side are the noise floor without a twin: repeat 1
// against repeat 0, with the short answer of repeat 1 against the same.
func TestProveVaryingAgainstRepeats(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	full, short, _ := world{n: 300, share: 0.1, flip: 0.5, repeats: 2}.sides(t, 5)
	p := c.ProveVarying(full, short, nil, triageProof(), Variation{Varies: true, Why: "w"})
	n := p.Noise
	if n.Source != NoiseSourceRepeats || n.Units != 300 || n.NoiseDiffer == 0 || !p.OK {
		t.Fatalf("got OK %v, noise %+v; want a pass within a floor measured over 300 pairs of repeats", p.OK, n)
	}
	wantLines(t, proofText(t, p), "noise floor (repeats of baseline: repeat 1 against repeat 0", "differ between repeats")

	full, short, _ = world{n: 300, share: 0.1, flip: 0.5, repeats: 2, effect: 0.15}.sides(t, 5)
	if p := c.ProveVarying(full, short, nil, triageProof(), Variation{Varies: true, Why: "w"}); p.OK || p.Noise.Verdict != NoiseBeyondFloor {
		t.Errorf("got OK %v, noise %+v; want a failure beyond the floor", p.OK, p.Noise)
	}
}

// The test's error rate: over seeded runs where the short side is one more
// identical call, the proof fails in at most alpha of them (the exact
// sign test is conservative; 200 runs bound the rate loosely).
func TestProveVaryingErrorRate(t *testing.T) {
	t.Parallel()
	if testing.Short() || raceEnabled {
		t.Skip("200 proofs, sequential: without -short and -race")
	}
	c := loadTriage(t)
	const runs = 200
	failed := world{n: 120, share: 0.15, flip: 0.5}.failedRuns(t, c, 1000, runs)
	// At alpha 0.05, 200 runs fail about 10 times at most; 19 would be
	// near 3 standard deviations above that.
	if failed > 18 {
		t.Errorf("%d of %d runs of a shortening that changes nothing failed; want at most about 5%%", failed, runs)
	}
	t.Logf("%d of %d runs failed", failed, runs)
}

// The test's power at the default experiment's size and variation (480
// tasks, 5% of them varying at flip 0.5, a twin): a shortening that
// changes 5% of decisions fails in nearly every run; 2% in about half.
func TestProveVaryingPower(t *testing.T) {
	t.Parallel()
	if testing.Short() || raceEnabled {
		t.Skip("200 proofs of 480 tasks, sequential: without -short and -race")
	}
	c := loadTriage(t)
	const runs = 100
	for _, tc := range []struct {
		effect   float64
		min, max int // failed runs expected, of 100
	}{{0.02, 30, 70}, {0.05, 95, runs}} {
		failed := world{n: 480, share: 0.05, flip: 0.5, effect: tc.effect}.failedRuns(t, c, 5000, runs)
		t.Logf("a shortening changing %.0f%% of decisions failed %d of %d runs", 100*tc.effect, failed, runs)
		if failed < tc.min || failed > tc.max {
			t.Errorf("effect %.2f: %d of %d runs failed; want %d..%d", tc.effect, failed, runs, tc.min, tc.max)
		}
	}
}
