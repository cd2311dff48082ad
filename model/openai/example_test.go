package openai_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/openai"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/model/simserver"
)

// A backend pointed at an OpenAI-compatible server: here crab's own
// simulated server, at time-scale 0 so nothing waits.
func ExampleNew() {
	cfg := sim.Large()
	cfg.TimeScale = 0
	m, _ := sim.New(cfg)
	srv, _ := simserver.New(simserver.Config{Models: []*sim.Model{m}})
	hs := httptest.NewServer(srv)
	defer hs.Close()

	b, err := openai.New(openai.Config{
		BaseURL: hs.URL + "/v1", Model: "large",
		PriceIn: 2.5 / 1e6, PriceOut: 10 / 1e6, // per token
	})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	resp, err := b.Complete(context.Background(), &model.Request{
		TaskID: "t1", Text: "I was charged twice for my March invoice.", Mode: model.ModeShort,
		Scope:    model.Scope{Tenant: "acme", Permission: "agent", Lang: "en", DocVersion: "v2"},
		Contract: []byte(`{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"],"additionalProperties":false}`),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Model, resp.FinishReason, resp.Content, resp.Trace.Attempts, resp.Usage.TokensOut > 0)
	// Output: large stop {"summary":"I was charged twice for my March"} 1 true
}
