package sim_test

import (
	"context"
	"fmt"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/sim"
)

// A simulated model at time-scale 0 answers at once but reports the
// latency it simulated; ParseAnswer reads the triage answer.
func ExampleNew() {
	cfg := sim.Large()
	cfg.TimeScale = 0
	m, err := sim.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := m.Complete(context.Background(), &model.Request{
		Text:  "This is not a billing question: my parcel has been stuck in customs for two weeks.",
		Mode:  model.ModeShort,
		Scope: model.Scope{Tenant: "acme", Permission: "agent", Lang: "en", DocVersion: "v2"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := sim.ParseAnswer(resp.Content)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a.Category, a.NeedsHumanReview, resp.FinishReason)
	fmt.Println(a.Evidence[0])
	fmt.Println(a.SuggestedAction)
	// Output:
	// shipping false stop
	// This is not a billing question: my parcel has been stuck in customs for two weeks.
	// Draft for agent confirmation: look up the shipment and open a trace with the carrier for account ACME-6FEC0C, per acme shipping policy v2.
}
