package contract

import (
	"strconv"

	"github.com/crab-testbed/crab/internal/binom"
)

// DefaultNoiseAlpha is the error rate of the proof's test against the noise
// floor when Variation.Alpha is 0: a shortening that changes nothing fails
// the proof in at most 5% of runs.
const DefaultNoiseAlpha = 0.05

// Variation is what the shortening proof knows of how its answers vary
// from call to call.
type Variation struct {
	// Varies says the answers may differ between identical calls (a
	// model of the run varies); false keeps the exact proof, where every
	// task that decides otherwise fails.
	Varies bool
	// Why says why the answers may vary, for the proof's text ("model
	// small varies: share 0.05, flip 0.5").
	Why string
	// Twin is an identical copy of the full side (an A/A control arm run
	// beside it); nil when there is none. Without it, the full side's own
	// repeats, taken in pairs, are the identical calls.
	Twin *ProofSide
	// Alpha is the test's error rate, in (0, 0.5); 0 means
	// DefaultNoiseAlpha.
	Alpha float64
}

// Noise floor verdicts (NoiseFloor.Verdict).
const (
	NoiseNoDifference = "no_difference" // no task differs: the exact proof's verdict stands
	NoiseWithinFloor  = "within_noise"  // the short side differs no more than identical calls, beyond chance
	NoiseBeyondFloor  = "beyond_noise"  // the short side differs more than identical calls do
	NoiseCannotTell   = "cannot_tell"   // tasks differ and no noise floor was measured
)

// Where a task that differs stands (TaskProof.Noise).
const (
	NoiseWithin = "within" // identical calls differed on the same task too
	NoiseBeyond = "beyond" // identical calls agreed on this task
)

// Noise floor sources (NoiseFloor.Source).
const (
	NoiseSourceTwin    = "twin"    // an identical copy of the full side
	NoiseSourceRepeats = "repeats" // the full side's repeats, in pairs
)

// NoiseFloor is how the proof weighed call-to-call variation: how often
// identical calls differ, how often the short answer differs from the full
// one over the same tasks, and the test between the two.
type NoiseFloor struct {
	// Why says why the answers may vary.
	Why string `json:"why"`
	// Source is NoiseSourceTwin or NoiseSourceRepeats, empty when no
	// noise floor was measured; Label names the twin side.
	Source string `json:"source"`
	Label  string `json:"label,omitempty"`
	// Units are the tasks (and repeats) compared both ways: the short
	// answer and an identical call, each against the same full answer.
	Units int `json:"units"`
	// ShortDiffer and NoiseDiffer count the units whose short answer, and
	// whose identical call, differ from the full answer; ShortOnly and
	// NoiseOnly the units where only that one does.
	ShortDiffer int `json:"short_differ"`
	NoiseDiffer int `json:"noise_differ"`
	ShortOnly   int `json:"short_only"`
	NoiseOnly   int `json:"noise_only"`
	// P is the exact one-sided sign test's p-value over the units where
	// exactly one differs: the chance of ShortOnly or more of them falling
	// on the short side were the short answer an identical call; nil when
	// no noise floor was measured.
	P     *float64 `json:"p"`
	Alpha float64  `json:"alpha"`
	// Within and Beyond are the tasks that differ, by whether identical
	// calls differed on the same task too.
	Within []string `json:"within,omitempty"`
	Beyond []string `json:"beyond,omitempty"`
	// Verdict is one of the Noise* verdicts.
	Verdict string `json:"verdict"`
}

// ProveVarying is ProveSides for answers that may vary from call to call.
// With v.Varies false it is ProveSides. Otherwise a task whose short
// answer meets the contract and keeps every field, but decides or supports
// something else than the full answer (a changed decide field, a dropped
// superset item, evidence that no longer supports it), differs
// (ProofDiffers) instead of failing, since two identical calls can differ
// so too; every other failure still fails outright.
//
// The tasks that differ are weighed against a noise floor: identical
// calls compared with the same full answers — v.Twin, else the full
// side's repeats in pairs (repeat 1 against repeat 0, 3 against 2, ...;
// then only the short side's even repeats are weighed). Over the units
// compared both ways, ShortOnly counts those where only the short answer
// differs and NoiseOnly those where only the identical call does. If
// shortening changes nothing, the short answer is one more identical
// call, so each such unit falls on either side with probability 1/2; the
// proof fails when ShortOnly is that high with probability under alpha
// (the exact one-sided sign test), so a shortening that changes nothing
// fails in at most alpha of runs. With no noise floor measured, tasks
// that differ leave the proof unable to tell shortening from
// call-to-call variation: never a pass.
func (c *Contract) ProveVarying(full, short *ProofSide, tickets map[string]string, cfg ProofConfig, v Variation) *Proof {
	p := c.ProveSides(full, short, tickets, cfg)
	if !v.Varies {
		return p
	}
	nf := &NoiseFloor{Why: v.Why, Alpha: v.Alpha}
	if nf.Alpha <= 0 {
		nf.Alpha = DefaultNoiseAlpha
	}
	p.Noise = nf
	for i := range p.Tasks {
		if t := &p.Tasks[i]; t.Verdict == ProofFail && !t.outright {
			t.Verdict = ProofDiffers
			p.Fail--
			p.Differs++
		}
	}

	taskOf := map[string]string{}
	for _, s := range []*ProofSide{full, short} {
		for i := range s.Answers {
			taskOf[s.Answers[i].Key()] = s.Answers[i].Task
		}
	}
	verdicts := make(map[string]string, len(p.Tasks))
	for _, t := range p.Tasks {
		verdicts[t.Task] = t.Verdict
	}
	units, varied := c.noiseUnits(full, short, v.Twin, tickets, p.cfg, verdicts, nf)
	for _, u := range units {
		nf.Units++
		switch {
		case u.short && u.noise:
			nf.ShortDiffer++
			nf.NoiseDiffer++
		case u.short:
			nf.ShortDiffer++
			nf.ShortOnly++
		case u.noise:
			nf.NoiseDiffer++
			nf.NoiseOnly++
		}
	}
	for i := range p.Tasks {
		t := &p.Tasks[i]
		if t.Verdict != ProofDiffers || nf.Source == "" {
			continue
		}
		if varied[taskOf[t.Task]] {
			t.Noise = NoiseWithin
			nf.Within = append(nf.Within, t.Task)
		} else {
			t.Noise = NoiseBeyond
			nf.Beyond = append(nf.Beyond, t.Task)
		}
	}
	if nf.Source != "" {
		pv := binom.SignTest(nf.ShortOnly, nf.ShortOnly+nf.NoiseOnly)
		nf.P = &pv
	}
	switch {
	case p.Differs == 0:
		nf.Verdict = NoiseNoDifference
	case nf.P == nil:
		nf.Verdict = NoiseCannotTell
	case *nf.P < nf.Alpha:
		nf.Verdict = NoiseBeyondFloor
	default:
		nf.Verdict = NoiseWithinFloor
	}
	p.OK = p.Fail == 0 && p.Pass > 0 && p.Cancelled == 0 && (p.Differs == 0 || nf.Verdict == NoiseWithinFloor)
	return p
}

// noiseUnit is one unit of the test against the noise floor: whether the
// short answer, and whether an identical call, differ from the same full
// answer.
type noiseUnit struct{ short, noise bool }

// noiseUnits pairs the short side's answers with identical calls, each
// against the same full answer (any failure of the proof's rules is a
// difference), and names the tasks on which identical calls differed.
//
// With a twin, a unit is a task and repeat both the short answer and the
// twin's were compared on (verdicts: the short side's, by key). Without
// one, the full side's repeats are the identical calls, in pairs: repeat
// k+1 against repeat k, for every even k. Repeats differ in their seed as
// well as in the call, so the short answer compared is the one of repeat
// k+1 too, against the full answer of repeat k: both sides of a unit then
// differ from the reference by the same seed and call, and are
// exchangeable when shortening changes nothing. Units neither side could
// compare are left out. nf's Source and Label are set when any identical
// call was compared.
func (c *Contract) noiseUnits(full, short, twin *ProofSide, tickets map[string]string, cfg ProofConfig, verdicts map[string]string, nf *NoiseFloor) ([]noiseUnit, map[string]bool) {
	differs := func(t TaskProof) (bool, bool) { return t.Verdict != ProofPass, t.Verdict != ProofNotCompared }
	varied := map[string]bool{}
	var units []noiseUnit
	fm, sm := byKey(full), byKey(short)
	if twin != nil {
		pairs := pairSides(full, twin, tickets)
		for i, t := range c.Prove(pairs, cfg).Tasks {
			nd, ok := differs(t)
			if !ok || pairs[i].Full == nil || pairs[i].Short == nil {
				continue
			}
			nf.Source, nf.Label = NoiseSourceTwin, twin.Label
			if nd {
				varied[fm[t.Task].Task] = true
			}
			if sv := verdicts[t.Task]; sv == ProofPass || sv == ProofDiffers {
				units = append(units, noiseUnit{short: sv == ProofDiffers, noise: nd})
			}
		}
		return units, varied
	}
	for i := range full.Answers {
		a := &full.Answers[i]
		if a.Repeat%2 != 0 {
			continue
		}
		next := (&SideAnswer{Task: a.Task, Repeat: a.Repeat + 1}).Key()
		b := fm[next]
		if b == nil {
			continue
		}
		ticket := tickets[a.Task]
		rep := c.Prove([]Pair{{Task: next, Ticket: ticket, Full: a.Answer, Short: b.Answer}}, cfg).Tasks[0]
		nd, ok := differs(rep)
		if !ok {
			continue
		}
		nf.Source = NoiseSourceRepeats
		if nd {
			varied[a.Task] = true
		}
		if s := sm[next]; s != nil {
			st := c.Prove([]Pair{{Task: next, Ticket: ticket, Full: a.Answer, Short: s.Answer}}, cfg).Tasks[0]
			if sd, ok := differs(st); ok {
				units = append(units, noiseUnit{short: sd, noise: nd})
			}
		}
	}
	return units, varied
}

// formatP prints a p-value with four significant digits.
func formatP(p float64) string { return strconv.FormatFloat(p, 'g', 4, 64) }
