package router_test

import (
	"context"
	"fmt"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/router"
)

// A router in front of two backends: easy tickets go to the small model,
// hard ones to the large model, and the trace says why.
func ExampleNew() {
	answer := func(name string) model.Model {
		return model.ModelFunc(func(_ context.Context, req *model.Request) (*model.Response, error) {
			return &model.Response{Content: "answered by " + name}, nil
		})
	}
	mux, err := model.NewMux("large", map[string]model.Model{"small": answer("small"), "large": answer("large")})
	if err != nil {
		fmt.Println(err)
		return
	}
	route, err := router.New(router.Config{Threshold: 0.5, Small: "small", Large: "large"}, nil) // nil: built-in scorer
	if err != nil {
		fmt.Println(err)
		return
	}
	stack := model.Chain(mux, route)
	for _, text := range []string{
		"I was charged twice for my subscription this month.",
		"This is not a billing question: the app crashes on start.",
	} {
		resp, err := stack.Complete(context.Background(), &model.Request{Text: text, Scope: model.Scope{Lang: "en"}})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s (score %.2f)\n", resp.Content, resp.Trace.RouteScore)
	}
	// Output:
	// answered by small (score 0.00)
	// answered by large (score 0.82)
}

// The built-in scorer shows which features made a score.
func ExampleFeatureScorer() {
	s, err := router.NewFeatureScorer(router.DefaultFeatureConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, req := range []*model.Request{
		{Text: "Can you check the status of order #48213? It has not arrived.", Scope: model.Scope{Lang: "en"}},
		{Text: "这不是退款问题，应用一直闪退。", Scope: model.Scope{Lang: "zh-CN"}},
	} {
		fmt.Println(s.Score(req))
	}
	// Output:
	// 0.33 len=61 cues=0 tool
	// 0.93 len=15 cues=2(refund,technical) neg lang=zh
}

// A scorer of your own: any function from request to score.
func ExampleScorerFunc() {
	byLength := router.ScorerFunc(func(req *model.Request) router.Score {
		return router.Score{Value: min(float64(len(req.Text))/1000, 1)}
	})
	cfg := router.Config{Threshold: 0.3, Small: "small", Large: "large"}
	v := byLength.Score(&model.Request{Text: "short ticket"}).Value
	fmt.Println(cfg.Choose(v))
	// Output:
	// small
}
