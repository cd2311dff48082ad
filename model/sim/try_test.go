package sim

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/crab-testbed/crab/model"
)

func TestTry(t *testing.T) {
	raw, _ := os.ReadFile("../../fixtures/triage.schema.json")
	for _, kind := range []Config{Small(), Large()} {
		kind.TimeScale = 0
		kind.Oracle = func(id string) map[string]any { return map[string]any{"category": "billing", "needs_human_review": false} }
		m, err := New(kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"full", "short", "over_short"} {
			r, err := m.Complete(context.Background(), &model.Request{TaskID: "x", Text: "Hi. I was charged twice for invoice INV-2024-0318, not once! Can you refund? 请退款。", Mode: mode, Contract: raw,
				Scope: model.Scope{Tenant: "acme", Permission: "agent", Lang: "de", DocVersion: "v1"}})
			fmt.Println(kind.Name, mode, err, r.Confidence, r.Usage.TokensOut, r.Content)
		}
	}
}
