package model_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/model"
)

// named answers with its name, reporting no model of its own.
func named(name string) model.Model {
	return model.ModelFunc(func(_ context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Content: name + ":" + req.Model}, nil
	})
}

func TestMux(t *testing.T) {
	t.Parallel()
	if _, err := model.NewMux("x", map[string]model.Model{"a": named("a")}); !errors.Is(err, model.ErrUnknownModel) {
		t.Fatalf("NewMux with an unknown default: err = %v; want ErrUnknownModel", err)
	}
	backends := map[string]model.Model{"small": named("small"), "large": named("large")}
	m, err := model.NewMux("large", backends)
	if err != nil {
		t.Fatal(err)
	}
	delete(backends, "small") // the mux keeps its own copy
	if m.Default() != "large" || !slices.Equal(m.Names(), []string{"large", "small"}) {
		t.Errorf("Default %q, Names %v; want large, [large small]", m.Default(), m.Names())
	}
	tests := []struct {
		name, model, want, wantModel string
		wantErr                      error
	}{
		{"named", "small", "small:small", "small", nil},
		{"default", "", "large:large", "large", nil},
		{"unknown", "medium", "", "", model.ErrUnknownModel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := &model.Request{Text: "x", Model: tc.model}
			resp, err := m.Complete(context.Background(), req)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v; want %v", err, tc.wantErr)
			}
			if req.Model != tc.model {
				t.Errorf("the caller's request was changed: Model %q; want %q", req.Model, tc.model)
			}
			if err != nil {
				return
			}
			if resp.Content != tc.want || resp.Model != tc.wantModel {
				t.Errorf("got %q from %q; want %q from %q", resp.Content, resp.Model, tc.want, tc.wantModel)
			}
		})
	}
}

func TestChainOrder(t *testing.T) {
	t.Parallel()
	var order []string
	layer := func(name string) model.Middleware {
		return func(next model.Model) model.Model {
			return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
				order = append(order, name+">")
				resp, err := next.Complete(ctx, req)
				order = append(order, "<"+name)
				return resp, err
			})
		}
	}
	inner := model.ModelFunc(func(context.Context, *model.Request) (*model.Response, error) {
		order = append(order, "model")
		return &model.Response{}, nil
	})
	m := model.Chain(inner, layer("a"), nil, layer("b"))
	if _, err := m.Complete(context.Background(), &model.Request{}); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(order, " "), "a> b> model <b <a"; got != want {
		t.Errorf("order = %q; want %q (first listed outermost, nil skipped)", got, want)
	}
	if model.Chain(inner) == nil {
		t.Error("Chain without middleware returned nil")
	}
}

func TestRequestClone(t *testing.T) {
	t.Parallel()
	req := &model.Request{Text: "x", Model: "a", History: []model.Message{{Role: model.RoleUser, Content: "hi"}}}
	c := req.Clone()
	c.Model, c.Attempt = "b", 2
	if req.Model != "a" || req.Attempt != 0 {
		t.Errorf("changing the clone changed the original: %+v", req)
	}
	resp := &model.Response{Trace: model.Trace{Violations: []string{"/a: required"}}}
	rc := resp.Clone()
	rc.Trace.Violations[0] = "changed"
	if resp.Trace.Violations[0] != "/a: required" {
		t.Error("Response.Clone shares the violations")
	}
}
