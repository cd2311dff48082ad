package contract

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/crab-testbed/crab/internal/words"
)

// ProofSide is one side of a shortening proof as read: what it is called,
// where its answers came from, and the answers in the order read.
type ProofSide struct {
	// Label names the side in the report (an arm or a file name).
	Label string
	// Source is where the answers were read from (a file or a run).
	Source string
	// Answers are the side's answers, at most one per Key.
	Answers []SideAnswer
}

// SideAnswer is one answer of a side with what pairs it with the other
// side's.
type SideAnswer struct {
	Task   string // task id
	Repeat int    // repeat of the task, 0 for the first
	// Contract is the hash of the contract the answer was validated
	// against when it was produced; empty when not recorded.
	Contract string
	Answer   *Answer
}

// Key pairs answers across sides: the task id, and the repeat after the
// first ("t1 repeat 2").
func (a *SideAnswer) Key() string {
	if a.Repeat > 0 {
		return a.Task + " repeat " + strconv.Itoa(a.Repeat)
	}
	return a.Task
}

// ProveSides pairs the answers of two sides by task and repeat, in task id
// then repeat order whatever order they were read in, gives each pair its
// ticket text from tickets (task id to text; nil when unknown), and proves
// them (see Prove). The proof keeps the sides, so WriteText can name them.
func (c *Contract) ProveSides(full, short *ProofSide, tickets map[string]string, cfg ProofConfig) *Proof {
	cfg = c.resolve(cfg)
	p := c.Prove(pairSides(full, short, tickets), cfg)
	p.c, p.cfg, p.full, p.short = c, cfg, full, short
	return p
}

// pairSides pairs the answers of two sides by task and repeat, in task id
// then repeat order, each pair with its ticket text.
func pairSides(full, short *ProofSide, tickets map[string]string) []Pair {
	fm, sm := byKey(full), byKey(short)
	keys := make([]string, 0, len(full.Answers)+len(short.Answers))
	for i := range full.Answers {
		keys = append(keys, full.Answers[i].Key())
	}
	for i := range short.Answers {
		if k := short.Answers[i].Key(); fm[k] == nil {
			keys = append(keys, k)
		}
	}
	either := func(k string) *SideAnswer {
		if a := fm[k]; a != nil {
			return a
		}
		return sm[k]
	}
	slices.SortStableFunc(keys, func(x, y string) int {
		ax, ay := either(x), either(y)
		if c := strings.Compare(ax.Task, ay.Task); c != 0 {
			return c
		}
		return ax.Repeat - ay.Repeat
	})
	pairs := make([]Pair, len(keys))
	for i, k := range keys {
		p := Pair{Task: k}
		if a := fm[k]; a != nil {
			p.Full = a.Answer
			p.Ticket = tickets[a.Task]
		}
		if a := sm[k]; a != nil {
			p.Short = a.Answer
			p.Ticket = tickets[a.Task]
		}
		pairs[i] = p
	}
	return pairs
}

// byKey indexes a side's answers by Key; the first answer of a key wins.
func byKey(s *ProofSide) map[string]*SideAnswer {
	m := make(map[string]*SideAnswer, len(s.Answers))
	for i := range s.Answers {
		a := &s.Answers[i]
		if k := a.Key(); m[k] == nil {
			m[k] = a
		}
	}
	return m
}

// ProofText is what the text of a proof names beside the proof itself.
type ProofText struct {
	// ContractName names the contract file in the heading.
	ContractName string
	// TicketNote says where the ticket text came from, or why there is
	// none.
	TicketNote string
	// MaxListed bounds the failed and the not compared tasks listed, each;
	// 0 lists all.
	MaxListed int
}

// WriteText prints a proof made by ProveSides: the heading (sides,
// contract, rules, where the ticket text came from), every failed and not
// compared task with its findings, what shortening saved, the counts and
// the verdict.
func (p *Proof) WriteText(w io.Writer, o ProofText) error {
	full, short := p.full, p.short
	if full == nil || short == nil || p.c == nil {
		return fmt.Errorf("contract: WriteText needs a proof made by ProveSides")
	}
	cfg := p.cfg
	var b strings.Builder
	fmt.Fprintf(&b, "shortening proof: %s (short) against %s (full), contract %s (sha256 %s)\n",
		short.Label, full.Label, o.ContractName, hash12(p.c.Hash()))
	if full.Source == short.Source {
		fmt.Fprintf(&b, "answers: %s\n", full.Source)
	} else {
		fmt.Fprintf(&b, "answers: %s (full), %s (short)\n", full.Source, short.Source)
	}
	b.WriteString(rulesLine(p.c, cfg))
	b.WriteString("ticket text: " + o.TicketNote + "\n")
	for _, h := range p.otherContracts() {
		b.WriteString("note: " + h + "\n")
	}

	p.listTasks(&b, ProofFail, "", "FAIL", o.MaxListed)
	if p.Noise != nil && p.Noise.Source != "" {
		p.listTasks(&b, ProofDiffers, NoiseBeyond, "DIFFERS BEYOND NOISE", o.MaxListed)
		p.listTasks(&b, ProofDiffers, NoiseWithin, "DIFFERS WITHIN NOISE", o.MaxListed)
	} else {
		p.listTasks(&b, ProofDiffers, "", "DIFFERS", o.MaxListed)
	}
	p.listTasks(&b, ProofNotCompared, "", "NOT COMPARED", o.MaxListed)

	b.WriteString("\n")
	p.writeSavings(&b, full.Label, short.Label)
	b.WriteString("\n")
	if p.Noise != nil {
		p.writeNoise(&b, full.Label, short.Label)
		fmt.Fprintf(&b, "tasks: %d proven, %d failed, %s, %d not compared (of %d)\n", p.Pass, p.Fail, p.differCount(), p.NotCompared, len(p.Tasks))
	} else {
		fmt.Fprintf(&b, "tasks: %d proven, %d failed, %d not compared (of %d)\n", p.Pass, p.Fail, p.NotCompared, len(p.Tasks))
	}
	if len(p.Dropped) > 0 {
		b.WriteString("dropped fields: " + p.fieldCounts(p.Dropped) + "\n")
	}
	if len(p.Changed) > 0 {
		b.WriteString("changed fields: " + p.fieldCounts(p.Changed) + "\n")
	}
	switch {
	case p.Cancelled > 0:
		fmt.Fprintf(&b, "verdict: FAIL: incomplete: %d of %d tasks have a cancelled request (the run was interrupted), so the proof does not cover the work\n", p.Cancelled, len(p.Tasks))
	case p.OK && p.Differs > 0:
		fmt.Fprintf(&b, "verdict: PASS: every compared task's %s answer meets the contract and keeps every field, and the %s where it decides or supports otherwise than the %s answer are within the noise floor (p %s >= %s)\n",
			short.Label, words.Count(p.Differs, "task"), full.Label, formatP(*p.Noise.P), formatP(p.Noise.Alpha))
	case p.OK:
		fmt.Fprintf(&b, "verdict: PASS: every compared task's %s answer meets the contract and keeps what the %s answer decides and supports\n", short.Label, full.Label)
	case p.Fail > 0:
		fmt.Fprintf(&b, "verdict: FAIL: %d of %d tasks fail the proof\n", p.Fail, len(p.Tasks))
	case p.Noise != nil && p.Noise.Verdict == NoiseCannotTell:
		fmt.Fprintf(&b, "verdict: CANNOT TELL: %d of %d tasks decide or support otherwise than the %s answer, and with answers that vary from call to call and no noise floor measured the proof cannot tell shortening from call-to-call variation; a twin of %s (control: twin) or repeats of it (repeats: 2 or more) would\n",
			p.Differs, len(p.Tasks), full.Label, full.Label)
	case p.Noise != nil && p.Noise.Verdict == NoiseBeyondFloor:
		n := p.Noise
		fmt.Fprintf(&b, "verdict: FAIL: %s differs from %s on more tasks than identical calls do, beyond chance (%d vs %d of %d; p %s < %s)\n",
			short.Label, full.Label, n.ShortDiffer, n.NoiseDiffer, n.Units, formatP(*n.P), formatP(n.Alpha))
	default:
		b.WriteString("verdict: FAIL: no task could be compared, so nothing is proven\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// rulesLine names every field the proof checked and where the fields came
// from.
func rulesLine(c *Contract, cfg ProofConfig) string {
	from := "declared"
	switch {
	case cfg.Derived:
		from = "derived from the contract, no proof declaration"
	case cfg.Source != "":
		from = "declared in " + cfg.Source
	}
	rules := []string{"every required field present and non-empty (null only where the contract admits it)"}
	var keep []string
	for _, k := range cfg.Keep {
		if !slices.Contains(c.required, k) {
			keep = append(keep, k)
		}
	}
	if len(keep) > 0 {
		rules = append(rules, "also non-empty: "+strings.Join(keep, ", "))
	}
	if len(cfg.Same) > 0 {
		rules = append(rules, "unchanged: "+strings.Join(cfg.Same, ", "))
	}
	if len(cfg.Superset) > 0 {
		rules = append(rules, "every item kept: "+strings.Join(cfg.Superset, ", "))
	}
	if cfg.Evidence != "" {
		rules = append(rules, cfg.Evidence+" still supporting the full answer (an item shared, or quoting the same input span)")
	}
	return "rules (" + from + "): " + strings.Join(rules, "; ") + "\n"
}

// Failure is the one-line summary of a failed proof made by ProveSides
// ("shortening proof failed for short: 3 of 10 tasks fail; dropped fields:
// evidence"); empty when the proof is OK.
func (p *Proof) Failure() string {
	if p.OK {
		return ""
	}
	label := "short"
	if p.short != nil {
		label = p.short.Label
	}
	msg := fmt.Sprintf("shortening proof failed for %s: %d of %d tasks fail", label, p.Fail, len(p.Tasks))
	switch n := p.Noise; {
	case p.Cancelled > 0 || p.Fail > 0 || n == nil:
	case n.Verdict == NoiseCannotTell:
		return fmt.Sprintf("shortening proof cannot tell for %s: %d of %d tasks differ and no noise floor was measured (control: twin or repeats: 2 would measure one)", label, p.Differs, len(p.Tasks))
	case n.Verdict == NoiseBeyondFloor:
		msg = fmt.Sprintf("shortening proof failed for %s: differs on %d of %d tasks, identical calls on %d (sign test p %s < %s)", label, n.ShortDiffer, n.Units, n.NoiseDiffer, formatP(*n.P), formatP(n.Alpha))
	}
	if p.Cancelled > 0 {
		msg = fmt.Sprintf("shortening proof failed for %s: incomplete, %d of %d tasks have a cancelled request", label, p.Cancelled, len(p.Tasks))
	}
	if len(p.Dropped) > 0 {
		msg += "; dropped fields: " + strings.Join(p.orderedFields(p.Dropped), ", ")
	}
	return msg
}

// otherContracts notes answers a run validated against another contract.
func (p *Proof) otherContracts() []string {
	var notes []string
	for _, s := range []*ProofSide{p.full, p.short} {
		seen := map[string]int{}
		for _, a := range s.Answers {
			if a.Contract != "" && a.Contract != p.c.Hash() {
				seen[hash12(a.Contract)]++
			}
		}
		if len(seen) > 0 {
			notes = append(notes, fmt.Sprintf("%s: answers were validated during the run against contract %s, not this one", s.Label, words.Tally(seen)))
		}
	}
	return notes
}

// listTasks writes the tasks with one verdict (and, when noise is given,
// that standing against the noise floor) and their findings.
func (p *Proof) listTasks(b *strings.Builder, verdict, noise, title string, max int) {
	n, shown := 0, 0
	for _, t := range p.Tasks {
		if t.Verdict != verdict || noise != "" && t.Noise != noise {
			continue
		}
		n++
		if max > 0 && shown >= max {
			continue
		}
		if shown == 0 {
			b.WriteString("\n")
		}
		shown++
		fmt.Fprintf(b, "%s %s", title, t.Task)
		if len(t.Dropped) > 0 {
			b.WriteString(": dropped " + strings.Join(t.Dropped, ", "))
		}
		if len(t.Changed) > 0 {
			sep := ": "
			if len(t.Dropped) > 0 {
				sep = "; "
			}
			b.WriteString(sep + "changed " + strings.Join(t.Changed, ", "))
		}
		b.WriteString("\n")
		for _, pr := range t.Problems {
			b.WriteString("  - " + pr + "\n")
		}
	}
	if n > shown {
		fmt.Fprintf(b, "... and %d more %s (--max-listed 0 lists all)\n", n-shown, strings.ToLower(title))
	}
}

// writeSavings writes the table of what shortening saved.
func (p *Proof) writeSavings(b *strings.Builder, fullName, shortName string) {
	f, s := p.Full, p.Short
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "over %d tasks on both sides\tfull (%s)\tshort (%s)\tsaved\n", f.N, fullName, shortName)
	row := func(name string, fv, sv *float64, format func(float64) string) {
		if fv == nil || sv == nil {
			fmt.Fprintf(tw, "%s\tn/a\tn/a\tn/a\n", name)
			return
		}
		saved := format(*fv - *sv)
		if *fv != 0 {
			saved += fmt.Sprintf(" (%.1f%%)", (*fv-*sv) / *fv * 100)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, format(*fv), format(*sv), saved)
	}
	intp := func(v *int) *float64 {
		if v == nil {
			return nil
		}
		x := float64(*v)
		return &x
	}
	ms := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	tokens := func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
	cost := func(v float64) string { // four significant digits, fixed notation
		if v == 0 {
			return "0"
		}
		dec := max(0, min(12, 3-int(math.Floor(math.Log10(math.Abs(v))))))
		s := strconv.FormatFloat(v, 'f', dec, 64)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	row("output tokens", intp(f.TokensOut), intp(s.TokensOut), tokens)
	row("latency mean ms", f.LatencyMeanMs, s.LatencyMeanMs, ms)
	row("latency p50 ms", f.LatencyP50Ms, s.LatencyP50Ms, ms)
	row("latency p95 ms", f.LatencyP95Ms, s.LatencyP95Ms, ms)
	row("cost", f.Cost, s.Cost, cost)
	_ = tw.Flush()
	b.WriteString("(every answer counts, failed requests included; latency from the intended send time; percentiles nearest rank)\n")
}

// fieldCounts writes "evidence (478 tasks), risk_flags (478 tasks)" in
// contract order.
func (p *Proof) fieldCounts(m map[string]int) string {
	var parts []string
	for _, f := range p.orderedFields(m) {
		parts = append(parts, fmt.Sprintf("%s (%s)", f, words.Count(m[f], "task")))
	}
	return strings.Join(parts, ", ")
}

// orderedFields lists m's keys in contract order, others after, by name.
func (p *Proof) orderedFields(m map[string]int) []string {
	var req []string
	if p.c != nil {
		req = p.c.Required()
	}
	var out []string
	for _, f := range req {
		if _, ok := m[f]; ok {
			out = append(out, f)
		}
	}
	var rest []string
	for f := range m {
		if !slices.Contains(req, f) {
			rest = append(rest, f)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// hash12 is the first 12 hex digits of a contract hash.
func hash12(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// differCount is "10 differ (4 within noise, 6 beyond)", or "10 differ"
// when no noise floor was measured.
func (p *Proof) differCount() string {
	out := fmt.Sprintf("%d differ", p.Differs)
	if n := p.Noise; n.Source != "" && p.Differs > 0 {
		out += fmt.Sprintf(" (%d within noise, %d beyond)", len(n.Within), len(n.Beyond))
	}
	return out
}

// writeNoise writes why the answers vary, the noise floor and the test
// against it.
func (p *Proof) writeNoise(b *strings.Builder, fullName, shortName string) {
	n := p.Noise
	b.WriteString("answers vary from call to call: " + n.Why + "\n")
	if n.Source == "" {
		fmt.Fprintf(b, "noise floor: not measured (no twin of %s, no repeats of it): a task that differs may be call-to-call variation\n", fullName)
		return
	}
	what := fmt.Sprintf("%s, an identical copy of %s", n.Label, fullName)
	other, shortAt, between := n.Label, shortName, "identical calls"
	if n.Source == NoiseSourceRepeats {
		what = fmt.Sprintf("repeats of %s: repeat 1 against repeat 0, 3 against 2, ...; %s of the same odd repeat against the same even one", fullName, shortName)
		other, shortAt = fullName+" (next repeat)", shortName+" (next repeat)"
		between = "repeats"
	}
	if n.Units == 0 {
		fmt.Fprintf(b, "noise floor (%s): no task compared both ways\n", what)
		return
	}
	pct := func(k int) string {
		if n.Units == 0 {
			return "-"
		}
		return strconv.FormatFloat(100*float64(k)/float64(n.Units), 'f', 1, 64) + "%"
	}
	fmt.Fprintf(b, "noise floor (%s): %d of %d tasks differ between %s (%s); %s against %s: %d of %d (%s)\n",
		what, n.NoiseDiffer, n.Units, between, pct(n.NoiseDiffer), shortAt, fullName, n.ShortDiffer, n.Units, pct(n.ShortDiffer))
	fmt.Fprintf(b, "test: exact one-sided sign test over the %d tasks where only one of %s and %s differs from %s (%s only %d, %s only %d): p %s; the proof fails when p < %s, so a shortening that changes nothing fails in at most %s%% of runs\n",
		n.ShortOnly+n.NoiseOnly, shortAt, other, fullName, shortAt, n.ShortOnly, other, n.NoiseOnly, formatP(*n.P), formatP(n.Alpha), strconv.FormatFloat(100*n.Alpha, 'g', 4, 64))
}
