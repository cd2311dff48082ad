package contract

import (
	"strings"
	"testing"
)

// TestProveSidesPairsAndWrites checks the pairing (by task and repeat, in
// task order whatever order the sides were read in), the text and the
// one-line failure of a proof made from two sides.
func TestProveSidesPairsAndWrites(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	full := render(t, fullFields(), nil)
	dropped := render(t, shortFields(), func(m map[string]any) { delete(m, "risk_flags") })
	fs := &ProofSide{Label: "full", Source: "run", Answers: []SideAnswer{
		{Task: "t2", Answer: delivered(full)},
		{Task: "t1", Repeat: 1, Answer: delivered(full)},
		{Task: "t1", Answer: delivered(full), Contract: "0123456789abcdef"},
	}}
	ss := &ProofSide{Label: "short", Source: "run", Answers: []SideAnswer{
		{Task: "t1", Answer: delivered(render(t, shortFields(), nil))},
		{Task: "t2", Answer: delivered(dropped)},
		{Task: "t1", Repeat: 1, Answer: delivered(render(t, shortFields(), nil))},
		{Task: "t3", Answer: delivered(render(t, shortFields(), nil))},
	}}
	p := c.ProveSides(fs, ss, map[string]string{"t1": ticket, "t2": ticket}, triageProof())
	var got []string
	for _, tp := range p.Tasks {
		got = append(got, tp.Task+"="+tp.Verdict)
	}
	want := "t1=pass t1 repeat 1=pass t2=fail t3=fail"
	if strings.Join(got, " ") != want {
		t.Errorf("got tasks %q; want %q", strings.Join(got, " "), want)
	}
	var b strings.Builder
	if err := p.WriteText(&b, ProofText{ContractName: "triage.schema.json", TicketNote: "from tasks", MaxListed: 0}); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, w := range []string{
		"shortening proof: short (short) against full (full), contract triage.schema.json (sha256 ",
		"answers: run\n",
		"ticket text: from tasks\n",
		"note: full: answers were validated during the run against contract 0123456789ab 1, not this one\n",
		"FAIL t2: dropped risk_flags",
		"FAIL t3\n  - no full answer for this task",
		"tasks: 2 proven, 2 failed, 0 not compared (of 4)\n",
		"dropped fields: risk_flags (1 task)\n",
		"verdict: FAIL: 2 of 4 tasks fail the proof\n",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("text lacks %q:\n%s", w, text)
		}
	}
	if got, want := p.Failure(), "shortening proof failed for short: 2 of 4 tasks fail; dropped fields: risk_flags"; got != want {
		t.Errorf("Failure() = %q; want %q", got, want)
	}
	if err := c.Prove(nil, ProofConfig{}).WriteText(&b, ProofText{}); err == nil {
		t.Error("WriteText of a proof without sides: got nil error; want one")
	}
}
