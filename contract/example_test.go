package contract_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/model"
)

func ExampleContract_Validate() {
	raw, err := os.ReadFile("../fixtures/triage.schema.json")
	if err != nil {
		log.Fatal(err)
	}
	c, err := contract.Load("triage.schema.json", raw)
	if err != nil {
		log.Fatal(err)
	}
	answer := `{"category": "payments", "reason": "Charged twice.", "evidence": [],
		"suggested_action": "Refund one charge.", "needs_human_review": false, "background": null}`
	for _, v := range c.Validate(answer, model.FinishStop) {
		fmt.Println(v)
	}
	// Output:
	// /category: enum: got "payments"; want one of "billing", "refund", "technical", "account", "shipping", "security", "other"
	// /evidence: minItems: got 0, want 1
	// /risk_flags: required: missing required property "risk_flags"
}

func ExampleLoad_error() {
	_, err := contract.Load("broken.schema.json", []byte("{\n  \"type\": \"object\",\n  \"properties\": {\"a\": {\"type\": 5}}\n}"))
	fmt.Println(err)
	// Output:
	// broken.schema.json:3: /properties/a/type: not a valid JSON Schema: anyOf: matches no alternative (enum: got 5; want one of "array", "boolean", "integer", "null", "number", "object", "string"; type: got number; want array)
}

func ExampleNew() {
	raw, err := os.ReadFile("../fixtures/triage.schema.json")
	if err != nil {
		log.Fatal(err)
	}
	c, err := contract.Load("triage.schema.json", raw)
	if err != nil {
		log.Fatal(err)
	}
	mw, err := contract.New(c, contract.Config{Policy: contract.PolicyEscalate, EscalateTo: "large"})
	if err != nil {
		log.Fatal(err)
	}
	// A backend whose small model cuts its answer short.
	backend := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		resp := &model.Response{Model: req.Model, FinishReason: model.FinishStop, Trace: model.Trace{Attempts: 1}}
		if req.Model == "small" {
			resp.Content, resp.FinishReason = `{"category": "refund", "rea`, model.FinishLength
			return resp, nil
		}
		resp.Content = `{"category": "refund", "reason": "Charged twice.", "evidence": ["charged twice"],
			"risk_flags": [], "suggested_action": "Refund one charge.", "needs_human_review": false, "background": null}`
		return resp, nil
	})
	resp, err := model.Chain(backend, mw).Complete(context.Background(), &model.Request{Model: "small"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Model, resp.Trace.Attempts, resp.Trace.Escalated, resp.Trace.ContractOK)
	// Output:
	// large 2 true true
}

func ExampleLint() {
	raw := []byte(`{
  "type": "object",
  "properties": {
    "category": {"type": "string", "enum": ["billing", "refund"]},
    "note": {"type": "string", "pattern": "(?!spam).*"}
  },
  "required": ["category"],
  "additionalProperties": false
}`)
	for _, p := range contract.Lint(raw) {
		fmt.Printf("line %d: %s\n", p.Line, p)
	}
	// Output:
	// line 5: /properties/note: required: property "note" is not listed in required: strict mode needs every property required; write an optional value as a union with null (e.g. "type": ["string", "null"]) and list it
	// line 5: /properties/note/pattern: pattern: "(?!spam).*" is not an RE2 expression (Go regexp syntax: no look-around, no backreferences): invalid or unsupported Perl syntax: `(?!`
}

func ExampleContract_Prove() {
	raw, err := os.ReadFile("../fixtures/triage.schema.json")
	if err != nil {
		log.Fatal(err)
	}
	c, err := contract.Load("triage.schema.json", raw)
	if err != nil {
		log.Fatal(err)
	}
	full := `{"category": "refund", "reason": "Charged twice for one order; asks for one payment back.",
		"evidence": ["I was charged twice for order 1182", "I will dispute it with my bank"], "risk_flags": ["chargeback_threat"],
		"suggested_action": "Refund the duplicate payment.", "needs_human_review": true, "background": "Refund policy v3, section 2."}`
	short := `{"category": "refund", "reason": "Duplicate charge.", "evidence": ["charged twice for order 1182"],
		"risk_flags": ["chargeback_threat"], "suggested_action": "Refund the duplicate payment.", "needs_human_review": true, "background": null}`
	overShort := `{"category": "refund", "reason": "Duplicate charge.", "suggested_action": "Refund the duplicate payment.",
		"needs_human_review": true, "background": null}`

	p := c.Prove([]contract.Pair{
		{Task: "t1", Full: &contract.Answer{Output: full}, Short: &contract.Answer{Output: short}},
		{Task: "t2", Full: &contract.Answer{Output: full}, Short: &contract.Answer{Output: overShort}},
	}, contract.ProofConfig{Same: []string{"category", "needs_human_review"}, Superset: []string{"risk_flags"}, Evidence: "evidence"})
	for _, t := range p.Tasks {
		fmt.Println(t.Task, t.Verdict, t.Dropped)
	}
	fmt.Println("proof ok:", p.OK)
	// Output:
	// t1 pass []
	// t2 fail [evidence risk_flags]
	// proof ok: false
}

func ExampleContract_ProveSides() {
	raw, err := os.ReadFile("../fixtures/triage.schema.json")
	if err != nil {
		log.Fatal(err)
	}
	c, err := contract.Load("triage.schema.json", raw)
	if err != nil {
		log.Fatal(err)
	}
	full := `{"category": "refund", "reason": "Charged twice for the annual plan; asks for one payment back.",
		"evidence": ["charged twice for the annual plan"], "risk_flags": ["chargeback_threat"],
		"suggested_action": "Refund one payment.", "needs_human_review": true, "background": "Refunds within 30 days."}`
	short := `{"category": "refund", "reason": "Duplicate charge.", "evidence": ["charged twice"],
		"risk_flags": [], "suggested_action": "Refund one payment.", "needs_human_review": true, "background": null}`
	answer := func(s string) *contract.Answer { return &contract.Answer{Output: s, FinishReason: model.FinishStop} }
	p := c.ProveSides(
		&contract.ProofSide{Label: "full", Source: "records.jsonl", Answers: []contract.SideAnswer{{Task: "t1", Answer: answer(full)}}},
		&contract.ProofSide{Label: "short", Source: "records.jsonl", Answers: []contract.SideAnswer{{Task: "t1", Answer: answer(short)}}},
		nil, contract.ProofConfig{Same: []string{"category", "needs_human_review"}, Superset: []string{"risk_flags"}, Evidence: "evidence"})
	fmt.Println(p.Failure())
	for _, t := range p.Tasks {
		fmt.Println(t.Task, t.Verdict, t.Dropped)
	}
	// p.WriteText(os.Stdout, contract.ProofText{...}) prints the whole proof.
	// Output:
	// shortening proof failed for short: 1 of 1 tasks fail; dropped fields: risk_flags
	// t1 fail [risk_flags]
}
