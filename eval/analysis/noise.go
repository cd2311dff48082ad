package analysis

import (
	"fmt"

	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/words"
)

// Sources of a noise floor (Noise.Source).
const (
	NoiseRepeats = "repeats" // the baseline's repeats of each task
	NoiseTwin    = "twin"    // the baseline against its A/A twin
	NoiseNone    = "none"    // not measured
)

// Noise is the run's noise floor: how often identical calls of one task
// disagree on whether it passes (summary.json's top-level noise object).
// Figures not measured are null.
type Noise struct {
	// Source is repeats (the baseline's repeats of each task), twin (the
	// baseline against its A/A twin) or none.
	Source string `json:"source"`
	// Arm is the arm measured: the baseline, or the twin beside it.
	Arm string `json:"arm,omitempty"`
	// Tasks is the number of tasks measured (with two or more repeats, or
	// paired with the twin); VaryingTasks those whose outcome differed
	// between identical calls; Share their share.
	Tasks        *int     `json:"tasks"`
	VaryingTasks *int     `json:"varying_tasks"`
	Share        *float64 `json:"share"`
	// PerCall is the chance that two identical calls of a task disagree,
	// averaged over tasks: an equal candidate's per-task difference in
	// pass rate has about PerCall / repeats as its mean square.
	PerCall *float64 `json:"per_call"`
	// why says, when Source is none, why not.
	why string
}

// measured reports whether the noise floor was measured.
func (n *Noise) measured() bool { return n != nil && n.Source != NoiseNone }

// varies reports whether outcomes were seen to vary between identical calls.
func (n *Noise) varies() bool { return n.measured() && *n.VaryingTasks > 0 }

// m2 is the mean square of an equal candidate's per-task difference at
// repeats repeats per task (0 when not measured).
func (n *Noise) m2(repeats float64) float64 {
	if !n.measured() || repeats <= 0 {
		return 0
	}
	return *n.PerCall / repeats
}

// measureNoise measures the noise floor from the baseline's repeats, or
// else from the baseline against its twin (control).
func measureNoise(t *records.Symbols, s *Summary, byArm map[string][]*records.Rec, control string) *Noise {
	base := &s.Arms[0]
	if !base.Measured(records.FigureQuality) {
		return &Noise{Source: NoiseNone, why: "the baseline's records carry no grading"}
	}
	type counts struct{ n, pass int }
	perTask := map[records.Sym]*counts{}
	var order []records.Sym
	for _, r := range byArm[base.Name] {
		c := perTask[r.TaskID]
		if c == nil {
			c = &counts{}
			perTask[r.TaskID] = c
			order = append(order, r.TaskID)
		}
		c.n++
		if t.Attrs(r).Pass {
			c.pass++
		}
	}
	tasks, varying, disagree := 0, 0, 0.0
	for _, y := range order {
		c := perTask[y]
		if c.n < 2 {
			continue
		}
		tasks++
		if c.pass > 0 && c.pass < c.n {
			varying++
		}
		// The share of the task's pairs of calls that disagree.
		disagree += 2 * float64(c.pass*(c.n-c.pass)) / float64(c.n*(c.n-1))
	}
	if tasks > 0 {
		return newNoise(NoiseRepeats, base.Name, tasks, varying, disagree/float64(tasks))
	}
	for i := 1; i < len(s.Arms); i++ {
		a := &s.Arms[i]
		if a.Name != control || a.Paired == nil || len(a.Paired.tasks) == 0 || !a.Measured(records.FigureQuality) {
			continue
		}
		varying, pairs, discordant := 0, 0, 0
		for _, o := range a.Paired.tasks {
			if o.BaseOnly+o.CandOnly > 0 {
				varying++
			}
			pairs += o.Repeats()
			discordant += o.BaseOnly + o.CandOnly
		}
		return newNoise(NoiseTwin, a.Name, len(a.Paired.tasks), varying, float64(discordant)/float64(pairs))
	}
	return &Noise{Source: NoiseNone, why: "no task was repeated and there is no A/A twin"}
}

func newNoise(source, arm string, tasks, varying int, perCall float64) *Noise {
	share := float64(varying) / float64(tasks)
	return &Noise{Source: source, Arm: arm, Tasks: &tasks, VaryingTasks: &varying, Share: &share, PerCall: &perCall}
}

// String states the noise floor and what it means for the quality
// verdicts under rule.
func (n *Noise) String(rule, baseline string) string {
	switch {
	case n.Source == NoiseRepeats:
		return fmt.Sprintf("noise floor: %d of %s (%s) passed on some repeats of %s and failed on others (identical calls disagree %s of the time); %s",
			*n.VaryingTasks, words.Count(*n.Tasks, "repeated task"), figure.Pct(*n.Share), n.Arm, figure.Pct(*n.PerCall), n.meaning(rule))
	case n.Source == NoiseTwin:
		return fmt.Sprintf("noise floor: %d of %s (%s) came out differently on %s and its identical twin %s; %s",
			*n.VaryingTasks, words.Count(*n.Tasks, "task"), figure.Pct(*n.Share), baseline, n.Arm, n.meaning(rule))
	case sampleRule(rule):
		return "noise floor not measured (" + n.why + "): rule " + rule + " counts the tasks lost in this one sample, which is a valid rule only if every task's outcome is the same on every call; repeats (repeats: 2 or more) or an A/A twin (control: twin) would show whether it is"
	}
	return "noise floor not measured (" + n.why + "): the quality interval spans the differences between tasks seen here, but cannot tell how much of them is call-to-call noise, and a candidate's single outcome per task stands for its pass rate; repeats (repeats: 2 or more) or an A/A twin (control: twin) would measure it"
}

// meaning says what a measured noise floor means for the quality verdicts.
func (n *Noise) meaning(rule string) string {
	switch {
	case !sampleRule(rule):
		return "the quality interval carries this noise"
	case *n.VaryingTasks > 0:
		return "rule " + rule + " counts lost tasks of one sample, so some of what it counts as lost is this noise; rule margin judges pass rates"
	}
	return "rule " + rule + " counts lost tasks of one sample, valid while outcomes stay the same on every call, as they did here"
}
