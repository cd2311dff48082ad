package grade

import (
	"context"
	"testing"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/fixtures"
)

// BenchmarkGrade grades a triage answer in the shape the simulated models
// write against the expected fields of the shipped tasks (category and
// needs_human_review), as every request of a run is graded.
func BenchmarkGrade(b *testing.B) {
	raw, err := fixtures.FS.ReadFile("triage.schema.json")
	if err != nil {
		b.Fatal(err)
	}
	c, err := contract.Load("triage.schema.json", raw)
	if err != nil {
		b.Fatal(err)
	}
	g, err := New(Config{}, c, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	p, err := g.Plan(map[string]any{"category": "refund", "needs_human_review": true})
	if err != nil {
		b.Fatal(err)
	}
	const answer = `{"category":"refund","reason":"The customer asks for the annual plan charge to be returned.","evidence":["please refund the annual plan","charged twice on 3 May"],"risk_flags":["chargeback_threat"],"suggested_action":"Confirm the duplicate charge and refund one payment.","needs_human_review":true,"background":"Refund policy v2 allows refunds within 30 days."}`
	if vs := c.Validate(answer, ""); vs != nil {
		b.Fatalf("the answer breaks the contract: %v", vs)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(answer)))
	for b.Loop() {
		if res := g.Grade(ctx, Input{Plan: p, Content: answer}); !res.Correct {
			b.Fatalf("got %+v; want correct", res)
		}
	}
}
