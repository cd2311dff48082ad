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
