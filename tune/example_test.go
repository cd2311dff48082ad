package tune_test

import (
	"context"
	"fmt"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/router"
	"github.com/crab-testbed/crab/tune"
)

// A cascade asks the small model first and escalates an unconfident answer.
func ExampleNewCascade() {
	backend := model.ModelFunc(func(_ context.Context, req *model.Request) (*model.Response, error) {
		conf := 0.97
		if req.Model == "small" && len(req.Text) > 20 {
			conf = 0.4 // the small model is unsure of long tickets
		}
		return &model.Response{Model: req.Model, Confidence: conf, Usage: model.Usage{Cost: map[string]float64{"small": 1, "large": 10}[req.Model]}}, nil
	})
	cascade, err := router.NewCascade(router.CascadeConfig{Small: "small", Large: "large", Confidence: 0.6})
	if err != nil {
		fmt.Println(err)
		return
	}
	stack := model.Chain(backend, cascade)
	for _, text := range []string{"Refund please.", "My invoice, my login and my parcel are all wrong."} {
		resp, _ := stack.Complete(context.Background(), &model.Request{Text: text})
		fmt.Printf("%s escalated=%v cost=%v\n", resp.Model, resp.Trace.Escalated, resp.Usage.Cost)
	}
	// Output:
	// small escalated=false cost=1
	// large escalated=true cost=11
}

// Router chooses a threshold on a calibration split of an outcome table and
// reports it once on the holdout.
func ExampleRouter() {
	var samples []tune.Sample
	for i := range 40 {
		hard := i%4 == 0
		score := 0.1
		if hard {
			score = 0.8
		}
		samples = append(samples, tune.Sample{
			ID: fmt.Sprintf("t%02d", i), Group: "short", Key: fmt.Sprintf("question %d", i), Score: score,
			Small: tune.Outcome{Outcome: "ok", OK: true, Pass: !hard, Cost: 1, Confidence: 0.9},
			Large: tune.Outcome{Outcome: "ok", OK: true, Pass: true, Cost: 10, Confidence: 0.97},
		})
	}
	rep, err := tune.Router(samples, tune.Config{Seed: 1, Policies: []string{router.PolicyThreshold}})
	if err != nil {
		fmt.Println(err)
		return
	}
	h := rep.Holdout
	fmt.Printf("threshold %.1f: holdout pass %d of %d (all-large %d), cost %.0f (all-large %.0f), strong share %.2f\n",
		rep.Threshold, h.Pass, h.N, h.PassAllLarge, h.Cost, h.CostAllLarge, h.StrongShare)
	// Output:
	// threshold 0.8: holdout pass 12 of 12 (all-large 12), cost 30 (all-large 120), strong share 0.17
}
