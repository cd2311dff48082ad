package contract

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/model"
)

// ticket is the support ticket the proof tests' answers quote.
const ticket = "Hello, I was charged twice for the annual plan on 3 May. Please refund one of the payments or I will file a chargeback with my bank."

// fullFields is a full answer to ticket.
func fullFields() map[string]any {
	return map[string]any{
		"category":           "refund",
		"reason":             "The customer was charged twice and asks for one payment back.",
		"evidence":           []any{"I was charged twice for the annual plan on 3 May", "or I will file a chargeback with my bank"},
		"risk_flags":         []any{"chargeback_threat"},
		"suggested_action":   "Confirm the duplicate charge and refund one payment.",
		"needs_human_review": true,
		"background":         "Refund policy v2 allows refunds within 30 days.",
	}
}

// shortFields is the short answer the short output mode writes.
func shortFields() map[string]any {
	m := fullFields()
	m["reason"] = "Duplicate charge."
	m["evidence"] = []any{"I was charged twice for the annual plan on 3 May"}
	m["background"] = nil
	return m
}

func render(tb testing.TB, m map[string]any, edit func(m map[string]any)) string {
	tb.Helper()
	if edit != nil {
		edit(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func ip(v int) *int              { return &v }
func fp(v float64) *float64      { return &v }
func delivered(s string) *Answer { return &Answer{Output: s, FinishReason: model.FinishStop} }

func TestProve(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	full := render(t, fullFields(), nil)
	short := func(edit func(m map[string]any)) *Answer { return delivered(render(t, shortFields(), edit)) }
	type want struct {
		verdict          string
		dropped, changed []string
		problem          string // substring of some problem
	}
	tests := []struct {
		name        string
		full, short *Answer
		ticket      string
		want        want
	}{
		{name: "short mode keeps the contract", full: delivered(full), short: short(nil), want: want{verdict: ProofPass}},
		{name: "identical answers", full: delivered(full), short: delivered(full), want: want{verdict: ProofPass}},
		{name: "extra risk flag is fine", full: delivered(full), short: short(func(m map[string]any) { m["risk_flags"] = []any{"chargeback_threat", "legal_threat"} }), want: want{verdict: ProofPass}},
		{name: "empty risk flags on both sides", full: delivered(render(t, fullFields(), func(m map[string]any) { m["risk_flags"] = []any{} })),
			short: short(func(m map[string]any) { m["risk_flags"] = []any{} }), want: want{verdict: ProofPass}},
		{name: "evidence quoted differently, case and punctuation", full: delivered(full),
			short: short(func(m map[string]any) {
				m["evidence"] = []any{"“I WAS CHARGED TWICE for the annual plan, on 3 May…”"}
			}), want: want{verdict: ProofPass}},
		{name: "evidence trimmed to part of a full item", full: delivered(full),
			short: short(func(m map[string]any) { m["evidence"] = []any{"charged twice"} }), want: want{verdict: ProofPass}},
		{name: "evidence from the same ticket span in other bounds", full: delivered(full), ticket: ticket,
			short: short(func(m map[string]any) { m["evidence"] = []any{"twice for the annual plan on 3 May. Please refund"} }), want: want{verdict: ProofPass}},
		{name: "same span needs the ticket", full: delivered(full),
			short: short(func(m map[string]any) { m["evidence"] = []any{"twice for the annual plan on 3 May. Please refund"} }),
			want:  want{verdict: ProofFail, changed: []string{"evidence"}, problem: "no longer supports the full answer"}},
		{name: "evidence from another span of the ticket", full: delivered(full), ticket: ticket,
			short: short(func(m map[string]any) { m["evidence"] = []any{"Please refund one of the payments"} }),
			want:  want{verdict: ProofFail, changed: []string{"evidence"}}},
		{name: "evidence not in the ticket", full: delivered(full), ticket: ticket,
			short: short(func(m map[string]any) { m["evidence"] = []any{"the customer is angry"} }),
			want:  want{verdict: ProofFail, changed: []string{"evidence"}}},
		{name: "two-letter quotation never counts", full: delivered(full),
			short: short(func(m map[string]any) { m["evidence"] = []any{"on"} }),
			want:  want{verdict: ProofFail, changed: []string{"evidence"}}},

		{name: "over-short drops evidence and risk flags", full: delivered(full),
			short: short(func(m map[string]any) { delete(m, "evidence"); delete(m, "risk_flags") }),
			want:  want{verdict: ProofFail, dropped: []string{"evidence", "risk_flags"}, problem: `/evidence: required`}},
		{name: "refused as recorded by a run", full: delivered(full),
			short: &Answer{Status: StatusContractFail, Violations: []string{`/evidence: required: missing required property "evidence"`, `/risk_flags: required: missing required property "risk_flags"`}},
			want:  want{verdict: ProofFail, dropped: []string{"evidence", "risk_flags"}, problem: "refused by the contract"}},
		{name: "refused without recorded violations", full: delivered(full), short: &Answer{Status: StatusContractFail},
			want: want{verdict: ProofFail, problem: "no violation recorded"}},
		{name: "emptied evidence", full: delivered(full), short: short(func(m map[string]any) { m["evidence"] = []any{} }),
			want: want{verdict: ProofFail, dropped: []string{"evidence"}}},
		{name: "blank reason", full: delivered(full), short: short(func(m map[string]any) { m["reason"] = "" }),
			want: want{verdict: ProofFail, dropped: []string{"reason"}}},
		{name: "risk flags emptied", full: delivered(full), short: short(func(m map[string]any) { m["risk_flags"] = []any{} }),
			want: want{verdict: ProofFail, dropped: []string{"risk_flags"}, problem: "risk_flags is empty"}},
		{name: "a risk flag dropped", full: delivered(render(t, fullFields(), func(m map[string]any) { m["risk_flags"] = []any{"chargeback_threat", "legal_threat"} })),
			short: short(nil), want: want{verdict: ProofFail, dropped: []string{"risk_flags"}, problem: `risk_flags dropped: "legal_threat"`}},
		{name: "category changed", full: delivered(full), short: short(func(m map[string]any) { m["category"] = "billing" }),
			want: want{verdict: ProofFail, changed: []string{"category"}, problem: `category changed: "refund" in the full answer, "billing" in the short one`}},
		{name: "review flag changed", full: delivered(full), short: short(func(m map[string]any) { m["needs_human_review"] = false }),
			want: want{verdict: ProofFail, changed: []string{"needs_human_review"}}},
		{name: "truncated by a smaller budget", full: delivered(full), short: &Answer{Output: render(t, shortFields(), nil)[:50], FinishReason: model.FinishLength},
			want: want{verdict: ProofFail, problem: "truncated"}},
		{name: "no short answer", full: delivered(full), want: want{verdict: ProofFail, problem: "ran different work"}},
		{name: "no full answer", short: short(nil), want: want{verdict: ProofFail, problem: "ran different work"}},

		{name: "full request timed out", full: &Answer{Status: "timeout"}, short: short(nil),
			want: want{verdict: ProofNotCompared, problem: "the full request ended without an answer (timeout)"}},
		{name: "short request errored", full: delivered(full), short: &Answer{Status: "error"},
			want: want{verdict: ProofNotCompared, problem: "the short request ended without an answer (error)"}},
		{name: "both malformed by the model", full: &Answer{Status: StatusContractFail, Violations: []string{"(root): invalid_json: bad"}},
			short: &Answer{Status: StatusContractFail, Violations: []string{"(root): invalid_json: bad"}},
			want:  want{verdict: ProofNotCompared, problem: "nothing to compare"}},
		{name: "full malformed, short drops a field", full: &Answer{Status: StatusContractFail, Violations: []string{"(root): invalid_json: bad"}},
			short: short(func(m map[string]any) { delete(m, "risk_flags") }),
			want:  want{verdict: ProofFail, dropped: []string{"risk_flags"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := c.Prove([]Pair{{Task: "t1", Ticket: tt.ticket, Full: tt.full, Short: tt.short}}, triageProof())
			if len(p.Tasks) != 1 {
				t.Fatalf("got %d task proofs; want 1", len(p.Tasks))
			}
			tp := p.Tasks[0]
			if tp.Verdict != tt.want.verdict {
				t.Errorf("verdict %s; want %s (problems %q)", tp.Verdict, tt.want.verdict, tp.Problems)
			}
			if !slices.Equal(tp.Dropped, tt.want.dropped) {
				t.Errorf("dropped %q; want %q", tp.Dropped, tt.want.dropped)
			}
			if !slices.Equal(tp.Changed, tt.want.changed) {
				t.Errorf("changed %q; want %q", tp.Changed, tt.want.changed)
			}
			if tt.want.problem != "" && !slices.ContainsFunc(tp.Problems, func(s string) bool { return strings.Contains(s, tt.want.problem) }) {
				t.Errorf("problems %q; want one containing %q", tp.Problems, tt.want.problem)
			}
			if tp.Verdict != ProofPass && len(tp.Problems) == 0 {
				t.Errorf("verdict %s without a problem", tp.Verdict)
			}
			if got := p.OK; got != (tt.want.verdict == ProofPass) {
				t.Errorf("OK = %v; want %v", got, tt.want.verdict == ProofPass)
			}
		})
	}
}

func TestProveSummary(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	full := render(t, fullFields(), nil)
	short := render(t, shortFields(), nil)
	with := func(a *Answer, tok int, lat, cost float64) *Answer {
		a.TokensOut, a.LatencyMs, a.Cost = ip(tok), fp(lat), fp(cost)
		return a
	}
	pairs := []Pair{
		{Task: "t1", Full: with(delivered(full), 300, 2000, 3), Short: with(delivered(short), 100, 800, 1)},
		{Task: "t2", Full: with(delivered(full), 200, 1000, 2), Short: with(delivered(short), 100, 600, 1)},
		{Task: "t3", Full: with(&Answer{Status: "timeout"}, 0, 5000, 1), Short: with(delivered(short), 50, 400, 1)},
		{Task: "t4", Full: with(delivered(full), 100, 100, 1)}, // no short answer: not in the totals
	}
	p := c.Prove(pairs, triageProof())
	if p.Pass != 2 || p.Fail != 1 || p.NotCompared != 1 || p.OK {
		t.Errorf("pass %d, fail %d, not compared %d, OK %v; want 2, 1, 1, false", p.Pass, p.Fail, p.NotCompared, p.OK)
	}
	if p.Full.N != 3 || *p.Full.TokensOut != 500 || *p.Short.TokensOut != 250 || *p.Full.Cost != 6 || *p.Short.Cost != 3 {
		t.Errorf("totals full %+v short %+v; want n 3, tokens 500 vs 250, cost 6 vs 3", p.Full, p.Short)
	}
	// nearest rank over 3 values: p50 is the 2nd, p95 the 3rd.
	if *p.Full.LatencyP50Ms != 2000 || *p.Full.LatencyP95Ms != 5000 || *p.Short.LatencyMeanMs != 600 {
		t.Errorf("latency full p50 %v p95 %v, short mean %v; want 2000, 5000, 600", *p.Full.LatencyP50Ms, *p.Full.LatencyP95Ms, *p.Short.LatencyMeanMs)
	}

	// A figure one answer lacks is unknown, not zero.
	pairs[0].Short.Cost = nil
	if p := c.Prove(pairs, triageProof()); p.Short.Cost != nil || p.Full.Cost == nil {
		t.Errorf("short cost %v, full cost %v; want nil and a value", p.Short.Cost, p.Full.Cost)
	}

	if p := c.Prove(nil, triageProof()); p.OK {
		t.Error("empty proof is OK; want not OK: nothing was proven")
	}
}

func TestNormQuote(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{in: "", want: ""},
		{in: "  “Charged TWICE,”\n on 3 May… ", want: "charged twice on 3 may"},
		{in: "Kein Abrechnungsproblem – Lieferung fehlt", want: "kein abrechnungsproblem lieferung fehlt"},
		{in: "账单 重复扣款", want: "账单 重复扣款"},
	}
	for _, tt := range tests {
		if got := normQuote(tt.in); got != tt.want {
			t.Errorf("normQuote(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestNullable(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	for _, f := range c.Required() {
		if got, want := c.Nullable(f), f == "background"; got != want {
			t.Errorf("Nullable(%q) = %v; want %v", f, got, want)
		}
	}
}

// An interrupted arm proves nothing: every compared task passes, but a
// cancelled request makes the proof fail as incomplete.
func TestProveIncomplete(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	full := render(t, fullFields(), nil)
	short := render(t, shortFields(), nil)
	pairs := []Pair{
		{Task: "t1", Full: delivered(full), Short: delivered(short)},
		{Task: "t2", Full: delivered(full), Short: &Answer{Status: StatusCancelled}},
	}
	p := c.Prove(pairs, triageProof())
	if p.Pass != 1 || p.Fail != 0 || p.Cancelled != 1 || p.OK {
		t.Errorf("pass %d, fail %d, cancelled %d, OK %v; want 1, 0, 1, false", p.Pass, p.Fail, p.Cancelled, p.OK)
	}
	if p := c.Prove(pairs[:1], triageProof()); !p.OK {
		t.Errorf("the complete pair alone: OK false; want true")
	}
}

// triageProof is the triage demo's declaration: category and the review
// flag decided the same, risk flags kept, evidence still supporting.
func triageProof() ProofConfig {
	return ProofConfig{Same: []string{"category", "needs_human_review"}, Superset: []string{"risk_flags"}, Evidence: "evidence"}
}
