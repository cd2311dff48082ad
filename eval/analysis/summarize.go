package analysis

import (
	"fmt"
	"strings"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/par"
	"github.com/crab-testbed/crab/internal/words"
)

// armRecords are the records of a set split by arm, warm-up requests
// apart.
type armRecords struct {
	order    []string // every arm, in the order it first appears
	byArm    map[string][]*records.Rec
	warm     map[string]int
	warmRecs map[string][]*records.Rec // for the cold-cache figures
	repeats  map[int]bool
}

// splitByArm splits set's records by arm.
func splitByArm(t *records.Symbols, set *records.RecordSet) armRecords {
	ar := armRecords{byArm: map[string][]*records.Rec{}, warm: map[string]int{}, warmRecs: map[string][]*records.Rec{}, repeats: map[int]bool{}}
	// Each arm's slice is made to measure: on millions of records the
	// slack of growing ones would be the largest thing allocated here.
	perArm := map[records.Sym]int{}
	set.Each(func(r *records.Rec) {
		if !t.Attrs(r).Warmup {
			perArm[r.Arm]++
		}
	})
	set.Each(func(r *records.Rec) {
		if _, ok := ar.byArm[t.Str(r.Arm)]; !ok {
			ar.order = append(ar.order, t.Str(r.Arm))
			ar.byArm[t.Str(r.Arm)] = make([]*records.Rec, 0, perArm[r.Arm])
		}
		if t.Attrs(r).Warmup {
			ar.warm[t.Str(r.Arm)]++
			ar.warmRecs[t.Str(r.Arm)] = append(ar.warmRecs[t.Str(r.Arm)], r)
			return
		}
		ar.byArm[t.Str(r.Arm)] = append(ar.byArm[t.Str(r.Arm)], r)
		ar.repeats[t.Attrs(r).Repeat] = true
	})
	return ar
}

// arms returns every arm, the baseline first: want, or else the arm called
// "baseline", or else the first arm of the records.
func (ar armRecords) arms(want string) ([]string, error) {
	if len(ar.order) == 0 {
		return nil, ErrNoRecords
	}
	base := want
	if base == "" {
		base = ar.order[0]
		if _, ok := ar.byArm["baseline"]; ok {
			base = "baseline"
		}
	} else if _, ok := ar.byArm[base]; !ok {
		return nil, fmt.Errorf("%w %q (arms: %s)", ErrUnknownBaseline, base, strings.Join(ar.order, ", "))
	}
	for _, name := range ar.order {
		if len(ar.byArm[name]) == 0 {
			return nil, fmt.Errorf("%w: arm %q has only warm-up records", ErrNoRecords, name)
		}
	}
	arms := []string{base}
	for _, name := range ar.order {
		if name != base {
			arms = append(arms, name)
		}
	}
	return arms, nil
}

// Summarize computes every arm's figures, compares each candidate with the
// baseline task by task, and applies the quality gate. Arms are listed in
// the order they first appear in set, the baseline first.
func Summarize(set *records.RecordSet, opt Options) (*Summary, error) {
	if opt.Resamples <= 0 {
		opt.Resamples = DefaultResamples
	}
	t := set.Symbols()
	ar := splitByArm(t, set)
	arms, err := ar.arms(opt.Baseline)
	if err != nil {
		return nil, err
	}
	byArm, base := ar.byArm, arms[0]

	s := &Summary{Baseline: base}
	large := map[string]bool{}
	for _, m := range opt.LargeModels {
		large[m] = true
	}
	g := opt.gate()
	budget := summaryBudget(set.Len())
	// The figures below are computed in stages of independent pieces run at
	// once (see internal/par), each writing only its own results and
	// drawing from its own seeded streams: the summary is the same on one
	// CPU or many. The first stage reads only what the rework rule leaves
	// alone (send times, latencies, outcomes, models), before the rule
	// replaces the failing records' copies.
	var (
		stalled  map[*records.Rec]bool
		loads    map[string][]BackendLoad
		n        = int64(set.Len())
		blocked  = int64(blockedRecords(byArm, arms))
		clusters []Cluster
		stalls   []Stall
	)
	par.Run(budget,
		par.Task{Mem: stalledBytes * blocked, Run: func() { stalled = stalledRequests(t, byArm, arms, opt.Design) }},
		par.Task{Mem: clusterBytes * n, Run: func() { clusters = failureClusters(t, byArm, arms) }},
		par.Task{Mem: stallBytes * n, Run: func() { stalls = latencyStalls(t, byArm, arms) }},
		par.Task{Mem: loadBytes * n, Run: func() { loads = backendLoads(t, byArm, arms, opt.Design) }},
	)
	s.Clusters, s.Stalls = clusters, stalls
	left := newLeftOut(t, nil, stalled)
	ws := excusedWindows(t, s, byArm[base])
	// Carry-over past the burn-in is counted and tested for interference,
	// not left out: one long request (a hang until its timeout) would
	// otherwise mark every request sent while it was in flight, on every
	// arm, and leave nothing to compare.
	carry, interfered := crowdFigures(t, byArm, arms, opt.Design, left, ws)
	if len(arms) > 1 {
		s.Interference = interfered
	}
	rework := map[string]*ReworkStats{}
	if g.Rework != nil {
		for _, name := range arms {
			rework[name] = applyRework(t, g.Rework, byArm[name])
		}
	}
	s.Arms = make([]ArmSummary, len(arms))
	var tasks []par.Task
	for i, name := range arms {
		tasks = append(tasks, par.Task{Mem: armBytes * int64(len(byArm[name])), Run: func() {
			a := summarizeArm(t, name, byArm[name], ar.warm[name], large)
			a.Rework = rework[name]
			coldCache(t, &a, ar.warmRecs[name], large)
			s.Arms[i] = a
		}})
	}
	unc := make([]*Uncertainty, len(arms))
	for i, name := range arms {
		tasks = append(tasks, par.Task{Mem: uncertaintyBytes * int64(len(byArm[name])), Run: func() { unc[i] = uncertainty(t, byArm[name], opt.Seed) }})
	}
	par.Run(budget, tasks...)
	multiRepeat := len(ar.repeats) > 1
	var slo *SLO
	if g.Objective == ObjectiveGoodput {
		slo = &g.SLO
	}
	po := PairOptions{Seed: opt.Seed, Resamples: opt.Resamples, ShowRepeat: multiRepeat, SLO: slo}
	pairs, outside := make([]*Paired, len(arms)), make([]*Paired, len(arms))
	tasks = tasks[:0]
	for i, name := range arms {
		a := &s.Arms[i]
		a.Uncertainty = unc[i]
		// Only a switchback's burn-in (or its stalls) leaves requests out
		// of the latency figures for burnInLatency to summarise again.
		tasks = append(tasks, par.Task{Mem: burnInBytes * min(blocked, int64(len(byArm[name]))), Run: func() { burnInLatency(t, a, byArm[name], opt.Seed, large, left) }})
		if i == 0 {
			continue
		}
		pairN := int64(min(len(byArm[base]), len(byArm[name])))
		tasks = append(tasks, par.Task{Mem: pairBytes * pairN, Run: func() {
			p := comparePairs(t, byArm[base], byArm[name], po, left)
			pairs[i] = &p
		}})
		if len(ws) > 0 {
			tasks = append(tasks, par.Task{Mem: (pairBytes + 8) * pairN, Run: func() {
				b, c := outsideWindows(t, byArm[base], byArm[name], ws)
				o := comparePairs(t, b, c, po, left)
				outside[i] = &o
			}})
		}
	}
	par.Run(budget, tasks...)
	for i, name := range arms {
		for _, r := range byArm[name] {
			if carry[r] {
				s.Arms[i].CarryOver++
			}
		}
		if i > 0 {
			s.Arms[i].Paired, s.Arms[i].Outside = pairs[i], outside[i]
		}
		if a := &s.Arms[i]; a.Load != nil {
			a.Load.Offered = loads[a.Name]
		}
	}
	clearUnmeasured(&s.Arms[0], &s.Arms[0])
	s.Timed = true
	for _, name := range arms {
		for _, r := range byArm[name] {
			s.Timed = s.Timed && t.Attrs(r).Timed
		}
	}
	for i := 1; i < len(s.Arms); i++ {
		clearUnmeasured(&s.Arms[0], &s.Arms[i])
	}
	for _, te := range set.Torn() {
		why := te.Error()
		if opt.Incomplete != "" {
			why = opt.Incomplete + "; " + why
		}
		opt.Incomplete = why
	}
	s.Noise = measureNoise(t, s, byArm, g.Control)
	decide(s, opt)
	answerWarnings(t, s, byArm)
	storeWarnings(s, opt.StoreErrors)
	s.Notes = append(s.Notes, summaryNotes(s, opt, g, ar.warm, multiRepeat)...)
	s.Notes = append(s.Notes, loadNotes(s, opt.Design)...)
	interferenceWarnings(s, opt.Design)
	return s, nil
}

// What the pieces of a summary hold while they run, in bytes per record
// they read (see summaryBudget): sorted copies of figures (8 bytes),
// orders of records (4), the send and end times of flights (16).
const (
	stalledBytes     = 40
	clusterBytes     = 8
	stallBytes       = 8
	loadBytes        = 8
	armBytes         = 8
	uncertaintyBytes = 8
	burnInBytes      = 24
	pairBytes        = 24
)

// summaryBudget is how many bytes the pieces of a summary of n records
// may hold at once beside the records: an eighth of what the records
// cost themselves (a sorted copy of every figure is 8 bytes a record), so
// that running pieces at once adds little to the peak; a piece larger
// than that runs alone.
func summaryBudget(n int) int64 { return max(64<<20, int64(n)*10) }

// blockedRecords counts the records that carry their switchback block.
func blockedRecords(byArm map[string][]*records.Rec, arms []string) int {
	n := 0
	for _, name := range arms {
		for _, r := range byArm[name] {
			if r.Block != 0 {
				n++
			}
		}
	}
	return n
}

// excusedWindows are the failure clusters and stalls that may excuse a
// verdict. A window excuses one only when the baseline did not send in it
// or was hit there too: where the baseline sent at the same time and fared
// well, the failures or the slowness are the candidate's own.
func excusedWindows(t *records.Symbols, s *Summary, base []*records.Rec) []window {
	var ws []window
	for _, c := range s.Clusters {
		w := window{c.startNs, c.endNs}
		sent, failed, _ := inWindow(t, base, failingCore(c, base))
		if sent == 0 || float64(failed)/float64(sent) >= 0.5*float64(c.Failures)/float64(max(c.Requests, 1)) {
			ws = append(ws, w)
		}
	}
	for _, st := range s.Stalls {
		w := window{st.startNs, st.endNs}
		sent, _, p50 := inWindow(t, base, stalledCore(st, base))
		if sent == 0 || p50 >= (st.RunP50Ms+st.P50Ms)/2 {
			ws = append(ws, w)
		}
	}
	return ws
}

// summaryNotes are the notes that state how the figures of s were
// computed and what they leave out.
func summaryNotes(s *Summary, opt Options, g GateConfig, warm map[string]int, multiRepeat bool) []string {
	notes := []string{
		"percentiles are nearest rank (p_q = x[ceil(q·n/100)]); latency counts every request, a failed one at the time it ended; ok_* count successful requests only",
		"cost per pass = cost of all requests, failed ones included, / passing requests",
		g.String(),
	}
	if len(s.Arms) > 1 {
		notes = append(notes, s.family.note(g.Defaults()))
	}
	notes = append(notes, s.Noise.String(g.Defaults().Rule, s.Baseline))
	if g.Rework != nil {
		notes = append(notes, reworkNote(g.Rework))
	}
	if opt.Holdout != "" {
		notes = append(notes, opt.Holdout)
	}
	if opt.PassRule != "" {
		notes = append(notes, opt.PassRule)
	}
	notes = append(notes, gradeNotes(s)...)
	notes = append(notes, unmeasuredNotes(s, opt.Design)...)
	if len(s.Arms) > 1 {
		notes = append(notes, pairedNote(s, opt, multiRepeat))
	}
	cancelled := 0
	for i := range s.Arms {
		cancelled += s.Arms[i].Cancelled
	}
	if cancelled > 0 {
		notes = append(notes, fmt.Sprintf("%s cancelled by an interruption count in n and as failed, but not in any latency figure (they measured no system)", words.Count(cancelled, "request")))
	}
	nWarm := 0
	for _, v := range warm {
		nWarm += v
	}
	if nWarm > 0 {
		notes = append(notes, fmt.Sprintf("%d warm-up request(s) excluded from every figure", nWarm))
	}
	for i := range s.Arms {
		if n := loadNote(&s.Arms[i]); n != "" {
			notes = append(notes, n)
		}
	}
	for i := 1; i < len(s.Arms); i++ {
		a := &s.Arms[i]
		if len(a.Paired.Unmatched) > 0 {
			notes = append(notes, fmt.Sprintf("%s and %s ran different work: %s on one side only; the comparison covers the %d matched pair(s)",
				a.Name, s.Baseline, words.Count(len(a.Paired.Unmatched), "task"), a.Paired.Pairs))
		}
	}
	return notes
}

// pairedNote states what the paired deltas are and how their intervals
// were computed.
func pairedNote(s *Summary, opt Options, multiRepeat bool) string {
	per := "task"
	if multiRepeat {
		per = "task and repeat"
	}
	maxPairs := 0
	for i := 1; i < len(s.Arms); i++ {
		maxPairs = max(maxPairs, s.Arms[i].Paired.Pairs)
	}
	if maxPairs > PairBootstrapMaxN {
		return fmt.Sprintf("paired deltas are candidate - baseline per %s; intervals are 95%% intervals of the mean delta: normal (mean ± 1.96 standard errors) for comparisons of more than %d pairs, percentile-bootstrap (%d resamples, seed %d) below",
			per, PairBootstrapMaxN, opt.Resamples, opt.Seed)
	}
	return fmt.Sprintf("paired deltas are candidate - baseline per %s; intervals are percentile-bootstrap 95%% intervals of the mean delta (%d resamples, seed %d)",
		per, opt.Resamples, opt.Seed)
}
