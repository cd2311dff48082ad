package audit

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/crab-testbed/crab/cache"
)

// ladder is the chain of standard configurations, each adding to the one
// before, as StandardConfigs lists them: "text → +tenant → … →
// +conversation → full".
func ladder() string {
	var names []string
	for _, c := range StandardConfigs() {
		names = append(names, c.Name)
		if c.Name == AuditFull {
			break
		}
	}
	return strings.Join(names, " → ")
}

// leakCells are l's counts, one cell per leak kind in the order of
// cache.LeakKinds.
func leakCells(l cache.LeakCounts) []string {
	var out []string
	for _, k := range cache.LeakKinds() {
		out = append(out, u(l.Get(k)))
	}
	return out
}

// WriteText prints the report as aligned tables: the configurations side
// by side, hits and leaks per scenario, the timing side channel, and the
// verdict on the audited configuration.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "crab audit: %d scenarios, %d lines (%d requests) from %s\n", len(r.Scenarios), r.Lines, r.Requests, r.Source)
	fmt.Fprintf(&b, "store %s, ttl %s, simulated models at time-scale %g; latency is wall-clock ms per request, nearest rank\n\n", r.Store, r.TTL, r.TimeScale)

	t := textTable{header: slices.Concat([]string{"config", "key", "check", "requests", "hits", "hit_rate", "hit_cost"},
		cache.LeakKinds(), []string{"other_req", "refused", "invalidated", "hit_p50", "hit_p95", "miss_p50", "miss_p95", "verdict"})}
	for i := range r.Configs {
		c := &r.Configs[i]
		cost := "-"
		if c.HitCost != nil {
			cost = strings.Replace(fmt.Sprintf("%.1fpp", 100**c.HitCost), "-0.0pp", "0.0pp", 1)
		}
		t.add(slices.Concat([]string{c.Name, c.Key, yesNo(c.CheckOnHit), strconv.Itoa(c.Requests), strconv.Itoa(c.Hits), pct(c.HitRate), cost},
			leakCells(c.Leaks), []string{strconv.Itoa(c.OtherRequest), u(c.ScopeMismatches), u(c.Invalidated),
				msp(c.HitP50Ms), msp(c.HitP95Ms), msp(c.MissP50Ms), msp(c.MissP95Ms), c.Verdict})...)
	}
	t.write(&b)
	fmt.Fprintf(&b, "hit_cost: hit rate lost against the row it adds to (%s; full-nocheck and text-checked against full and text; audited against text)\n", ladder())
	b.WriteString("cross_tenant … history: hits served an answer built for another scope, system prompt or conversation history; other_req: hits built for another model, mode, max tokens, sampling or contract; refused: hits check-on-hit turned into misses\n")

	if r.Probes > 0 {
		fmt.Fprintf(&b, "\nleak proof: %d cross-scope probes (each a request, then the same question from another tenant, permission, document version, language, system prompt or history, drawn with seed %d) and %d same-scope repeats\n", r.Probes, r.ProbeSeed, r.Repeats)
		pt := textTable{header: slices.Concat([]string{"config", "key", "check", "probes", "leaks", "leak_upper_95"},
			cache.LeakKinds(), []string{"other_req", "refused", "repeat_hits", "verdict"})}
		for i := range r.Configs {
			c := &r.Configs[i]
			p := c.Probe
			if p == nil {
				continue
			}
			pt.add(slices.Concat([]string{c.Name, c.Key, yesNo(c.CheckOnHit), strconv.Itoa(p.Probes), u(p.Leaks.Total()), bound(p.LeakUpper95)},
				leakCells(p.Leaks), []string{strconv.Itoa(p.OtherRequest), strconv.Itoa(p.Refused), fmt.Sprintf("%d/%d", p.RepeatHits, p.Repeats), c.Verdict})...)
		}
		pt.write(&b)
		b.WriteString("leak_upper_95: one-sided 95% upper bound on the leak rate per cross-scope probe (exact binomial, Clopper–Pearson; zero leaks in N bound it by 1−0.05^(1/N) ≈ 3/N)\n")
	}
	if len(r.Semantic) > 0 {
		writeSideBySide(&b, r)
	}

	b.WriteString("\nhits/wrong (leaks + other_req) per scenario:\n")
	st := textTable{header: append([]string{"scenario", "requests"}, configNames(r)...)}
	for si, name := range r.Scenarios {
		row := []string{name, ""}
		for ci := range r.Configs {
			s := r.Configs[ci].Scenarios[si]
			row[1] = strconv.Itoa(s.Requests)
			row = append(row, fmt.Sprintf("%d/%d", s.Hits, int(s.Leaks.Total())+s.OtherRequest))
		}
		st.add(row...)
	}
	st.write(&b)

	for i := range r.Configs {
		c := &r.Configs[i]
		for _, u := range c.Unexpected {
			fmt.Fprintf(&b, "%s: unexpected: %s\n", c.Name, u)
		}
	}

	if sc := r.SideChannel; sc != nil {
		fmt.Fprintf(&b, "\ntiming side channel: can a tenant tell from its latency that another tenant asked the same question first?\n")
		fmt.Fprintf(&b, "%d probes per condition (%s model, %s mode, time-scale %g); two-sample Kolmogorov–Smirnov, distinguishable when p < %g\n",
			sc.Trials, sc.Model, sc.Mode, sc.TimeScale, sc.Alpha)
		t := textTable{header: []string{"config", "key", "check", "asked_first_hits", "asked_first_p50", "asked_first_p95", "nobody_first_p50", "nobody_first_p95", "ks_d", "ks_p", "p_method", "distinguishable"}}
		for _, x := range sc.Results {
			method := "exact"
			if !x.KS.Exact {
				method = "asymptotic"
			}
			t.add(x.Name, x.Key, yesNo(x.CheckOnHit), fmt.Sprintf("%d/%d", x.AskedFirstHits, sc.Trials),
				ms3(x.AskedFirstP50Ms), ms3(x.AskedFirstP95Ms), ms3(x.NobodyP50Ms), ms3(x.NobodyP95Ms),
				strconv.FormatFloat(x.KS.D, 'f', 3, 64), fmtP(x.KS.P), method, yesNo(x.Distinguishable))
		}
		t.write(&b)
	}

	if a := r.AuditedConfig(); a != nil {
		fmt.Fprintf(&b, "\naudited: key %s, check on hit %s: %s", a.Key, onOff(a.CheckOnHit), verdictText(a))
		if p := a.Probe; p != nil {
			fmt.Fprintf(&b, "; leak proof: %d leaks in %d probes, leak rate <= %s (95%%, one-sided)", p.Leaks.Total(), p.Probes, bound(p.LeakUpper95))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSideBySide prints exact and semantic key designs on the same
// probes: hit rate on repeats and paraphrases, false hits on hard
// negatives and leaks, each count beside its bound.
func writeSideBySide(b *strings.Builder, r *Report) {
	var para, neg int
	if p := r.Semantic[0].Probe; p != nil {
		para, neg = p.Paraphrases, p.HardNegatives
	}
	fmt.Fprintf(b, "\nsemantic key designs beside exact ones, on the same probes: %d pairs in one scope each — %d paraphrases (rewording, typo, greeting: should hit) and %d hard negatives (negation, another number, identifier or product: must not hit)\n", r.Pairs, para, neg)
	t := textTable{header: []string{"config", "kind", "key", "check", "threshold", "embedder", "repeat_hits", "paraphrase_hits", "false_hits", "false_hit_upper_95", "leaks", "leak_upper_95", "verdict"}}
	row := func(c *ConfigResult) {
		p := c.Probe
		if p == nil {
			return
		}
		kind, thr, emb := "exact", "-", "-"
		if c.Kind != "" {
			kind, thr, emb = c.Kind, strconv.FormatFloat(c.Threshold, 'f', 4, 64), c.Embedder
		}
		t.add(c.Name, kind, c.Key, yesNo(c.CheckOnHit), thr, emb, fmt.Sprintf("%d/%d", p.RepeatHits, p.Repeats),
			fmt.Sprintf("%d/%d %s", p.ParaphraseHits, p.Paraphrases, pct(p.ParaphraseHitRate)),
			fmt.Sprintf("%d/%d", p.FalseHits, p.HardNegatives), bound(p.FalseHitUpper95),
			u(p.Leaks.Total()), bound(p.LeakUpper95), c.Verdict)
	}
	for i := range r.Configs {
		row(&r.Configs[i])
	}
	for i := range r.Semantic {
		row(&r.Semantic[i])
	}
	t.write(b)
	for i := range r.Semantic {
		c := &r.Semantic[i]
		if c.NoThreshold != "" {
			fmt.Fprintf(b, "%s: %s; probed at %.4f\n", c.Name, c.NoThreshold, c.Threshold)
		}
		if c.Tune == nil {
			continue
		}
		h := c.Tune.Holdout
		fmt.Fprintf(b, "%s: threshold %.4f chosen on %d calibration pairs (no false hit allowed); on %d holdout pairs: paraphrase hits %d/%d (%s), false hits %d/%d (<= %s)\n",
			c.Name, c.Tune.Threshold, c.Tune.Calibration.Paraphrases+c.Tune.Calibration.HardNegatives,
			h.Paraphrases+h.HardNegatives, h.Hits, h.Paraphrases, pct(h.HitRate), h.FalseHits, h.HardNegatives, bound(h.FalseHitUpper95))
	}
	b.WriteString("false_hit_upper_95: one-sided 95% upper bound on the false-hit rate per hard negative (Clopper–Pearson); a semantic cache partitions by every key field but the text, so its leaks come only from a key without scope fields\n")
}

func configNames(r *Report) []string {
	out := make([]string, len(r.Configs))
	for i := range r.Configs {
		out[i] = r.Configs[i].Name
	}
	return out
}

// verdictText explains a configuration's verdict in one sentence.
func verdictText(c *ConfigResult) string {
	switch c.Verdict {
	case VerdictLeaks:
		var kinds []string
		all := c.AllLeaks()
		for _, k := range cache.LeakKinds() {
			if n := all.Get(k); n > 0 {
				kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
			}
		}
		s := fmt.Sprintf("LEAKS: %d answers served to another scope or conversation (%s)", c.LeakTotal(), strings.Join(kinds, ", "))
		if c.OtherTotal() > 0 {
			s += fmt.Sprintf(", and %d built for another request", c.OtherTotal())
		}
		return s
	case VerdictWrong:
		return fmt.Sprintf("WRONG ANSWERS: %d hits built for another request (model, mode, max tokens, sampling or contract)", c.OtherTotal())
	case VerdictUnexpected:
		return fmt.Sprintf("UNEXPECTED: %d lines did not hit or miss as expected", len(c.Unexpected))
	case VerdictRefused:
		refused := c.ScopeMismatches
		if c.Probe != nil {
			refused += uint64(c.Probe.Refused)
		}
		return fmt.Sprintf("no leaks, but only because check on hit refused %d hits the key alone would have served", refused)
	}
	return fmt.Sprintf("no leaks, no wrong answers (hit rate %s)", pct(c.HitRate))
}

// bound prints a rate bound as a percentage with three significant
// digits: 0.0300%, 3.39%, 100%.
func bound(v float64) string {
	if v >= 0.9995 {
		return "100%"
	}
	return strings.TrimSuffix(fmt.Sprintf("%#.3g", 100*v), ".") + "%"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }

func pct(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }

func msp(v *float64) string {
	if v == nil {
		return "-"
	}
	return ms3(*v)
}

// ms3 prints milliseconds with three significant digits at least to the
// microsecond: 0.012, 2.41, 24.1.
func ms3(v float64) string {
	switch {
	case v < 1:
		return strconv.FormatFloat(v, 'f', 3, 64)
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func fmtP(p float64) string {
	if p >= 0.001 {
		return strconv.FormatFloat(p, 'f', 3, 64)
	}
	return strconv.FormatFloat(p, 'e', 1, 64)
}

// textTable is a left-aligned plain-text table: columns two spaces
// apart, the last one unpadded.
type textTable struct {
	header []string
	rows   [][]string
}

func (t *textTable) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *textTable) write(b *strings.Builder) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, r := range append([][]string{t.header}, t.rows...) {
		io.WriteString(tw, strings.Join(r, "\t")+"\n")
	}
	tw.Flush()
}
