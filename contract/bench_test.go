package contract

import (
	"context"
	"fmt"
	"testing"

	"github.com/crab-testbed/crab/model"
)

// BenchmarkValidate measures the schema check of one answer (validate,
// what an answer not validated lately costs) and, for a valid answer,
// Validate finding it among those validated lately (remembered).
func BenchmarkValidate(b *testing.B) {
	c := loadTriage(b)
	cases := []struct {
		name    string
		content string
		finish  string
	}{
		{name: "valid", content: answer(b, nil), finish: model.FinishStop},
		{name: "invalid", content: answer(b, func(m map[string]any) {
			m["category"] = "payments"
			m["evidence"] = []any{}
			delete(m, "risk_flags")
			m["extra"] = 1
		}), finish: model.FinishStop},
		{name: "invalid_json", content: `{"category": "refund", "reason": "dup`, finish: model.FinishLength},
	}
	for _, tc := range cases {
		want := len(c.Validate(tc.content, tc.finish)) == 0
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.content)))
			for b.Loop() {
				if got := len(c.validate(tc.content, tc.finish)) == 0; got != want {
					b.Fatalf("valid = %v; want %v", got, want)
				}
			}
		})
		b.Run(tc.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					c.validate(tc.content, tc.finish)
				}
			})
		})
	}
	valid := cases[0]
	b.Run("valid/remembered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if c.Validate(valid.content, valid.finish) != nil {
				b.Fatal("a valid answer found invalid")
			}
		}
	})
}

// BenchmarkMiddleware measures the contract layer's overhead around a
// model that answers at once.
func BenchmarkMiddleware(b *testing.B) {
	c := loadTriage(b)
	mw, err := New(c, Config{Policy: PolicyFail})
	if err != nil {
		b.Fatal(err)
	}
	// Answers differ from call to call, as a model's do: none is found
	// among those validated lately.
	contents := make([]string, 1000)
	for i := range contents {
		contents[i] = answer(b, func(m map[string]any) { m["reason"] = fmt.Sprintf("reason %d", i) })
	}
	n := 0
	next := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		n++
		return &model.Response{Content: contents[n%len(contents)], FinishReason: model.FinishStop}, nil
	})
	stack := model.Chain(next, mw)
	req := &model.Request{Text: "refund please", Model: "small"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := stack.Complete(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad is what compiling the contract costs: the reason Load runs
// once per experiment and every answer is validated against the same
// compiled Contract (BenchmarkValidate), never recompiled per request.
func BenchmarkLoad(b *testing.B) {
	raw := loadTriage(b).Raw()
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Load("triage.schema.json", raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProve measures the shortening proof per task.
func BenchmarkProve(b *testing.B) {
	c := loadTriage(b)
	full := &Answer{Output: answer(b, nil)}
	short := &Answer{Output: answer(b, func(m map[string]any) {
		m["reason"] = "Duplicate charge."
		m["evidence"] = []any{"charged twice on 3 May"}
		m["background"] = nil
	})}
	pairs := []Pair{{Task: "t1", Ticket: "Hello, I was charged twice on 3 May, please refund the annual plan.", Full: full, Short: short}}
	cfg := triageProof()
	b.ReportAllocs()
	for b.Loop() {
		if p := c.Prove(pairs, cfg); !p.OK {
			b.Fatalf("proof failed: %+v", p.Tasks)
		}
	}
}
