package eval

import (
	"context"
	"testing"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/stack"
)

func TestRunnerRecordOutput(t *testing.T) {
	t.Parallel()
	no, yes := false, true
	tests := []struct {
		name   string
		record *bool
		want   bool
	}{
		{"default (nil) keeps answers", nil, true},
		{"true keeps answers", &yes, true},
		{"false drops answers", &no, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			backend := model.ModelFunc(func(_ context.Context, req *model.Request) (*model.Response, error) {
				return &model.Response{Content: answer("billing"), Scope: req.Scope, Usage: model.Usage{Cost: 1}, FinishReason: model.FinishStop,
					Trace: model.Trace{Attempts: 1, Validated: true, ContractOK: true}}, nil
			})
			exp := testExperiment(stack.ArmSpec{Name: "a", Model: "m", Mode: "full"})
			exp.RecordOutput = tt.record
			r := &Runner{Exp: exp, Tasks: fakeTasks(3), RunID: "r",
				Build: func(spec stack.ArmSpec, _ int) (*ArmStack, func(), error) {
					return &ArmStack{Spec: spec, Stack: backend}, nil, nil
				}}
			got, _ := collect(t, context.Background(), r)
			for id, rec := range got {
				if has := rec.Output != ""; has != tt.want {
					t.Errorf("%s: output recorded = %v; want %v", id, has, tt.want)
				}
				if !rec.Pass {
					t.Errorf("%s: pass = false; want true (judging does not need the recorded text)", id)
				}
			}
		})
	}
}
