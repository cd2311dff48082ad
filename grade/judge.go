package grade

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/model"
)

// DefaultJudgeContract is the judge's contract when the grade section
// names none: a verdict and its reason.
const DefaultJudgeContract = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "judge",
  "description": "Whether an answer to a task is right, and why.",
  "type": "object",
  "properties": {
    "pass": {"description": "True when the answer is right for the task.", "type": "boolean"},
    "reason": {"description": "One sentence saying why.", "type": "string"}
  },
  "required": ["pass", "reason"],
  "additionalProperties": false
}
`

// Judge is the model grader (see JudgeConfig).
type Judge struct {
	cfg   JudgeConfig
	model model.Model
	sem   chan struct{}
}

// NewJudge returns the judge grader: m is the judge's backend, c its
// contract (nil: DefaultJudgeContract), which must have a required boolean
// field pass. Every judge answer is validated against c; one that fails it
// is a grading error.
func NewJudge(cfg JudgeConfig, m model.Model, c *contract.Contract) (*Judge, error) {
	if c == nil {
		var err error
		if c, err = contract.Load("judge contract", []byte(DefaultJudgeContract)); err != nil {
			return nil, err
		}
	}
	f, err := c.Field("/pass")
	if err != nil || !f.Admits("boolean") || slices.Contains(f.Types(), "string") || !slices.Contains(c.Required(), "pass") {
		return nil, &ConfigError{Field: "grade.judge.contract", Path: []any{"grade", "judge", "contract"}, Line: cfg.Line,
			Msg: fmt.Sprintf("%s: a judge contract needs a required boolean field pass", c.Name())}
	}
	mw, err := contract.New(c, contract.Config{})
	if err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultJudgeTimeout
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	return &Judge{cfg: cfg, model: mw(m), sem: make(chan struct{}, cfg.Concurrency)}, nil
}

func (j *Judge) grade(ctx context.Context, in Input, answer any) verdict {
	select {
	case j.sem <- struct{}{}:
	case <-ctx.Done():
		return verdict{err: "judge: not asked: " + ctx.Err().Error()}
	}
	defer func() { <-j.sem }()
	msg, err := json.Marshal(struct {
		Task   any `json:"task"`
		Answer any `json:"answer"`
	}{in.Task, answer})
	if err != nil {
		return verdict{err: "judge: cannot encode its input: " + err.Error()}
	}
	req := &model.Request{
		TaskID: "judge/" + in.TaskID, Text: string(msg), System: j.cfg.Instructions,
		Model: j.cfg.Model, Mode: model.ModeFull, MaxTokens: j.cfg.MaxTokens,
	}
	cctx, cancel := context.WithTimeout(ctx, j.cfg.Timeout)
	defer cancel()
	resp, err := j.model.Complete(cctx, req)
	var usage model.Usage
	if resp != nil {
		usage = resp.Usage
	}
	// costed is v with what the call cost.
	costed := func(v verdict) verdict {
		v.cost, v.unpriced = usage.Cost, usage.Unpriced
		return v
	}
	switch {
	case cctx.Err() == context.DeadlineExceeded:
		return costed(verdict{err: fmt.Sprintf("judge: timed out after %s", j.cfg.Timeout)})
	case err != nil:
		return costed(verdict{err: "judge: " + err.Error()})
	}
	doc, err := contract.DecodeAnswer(resp.Content)
	obj, _ := doc.(map[string]any)
	pass, ok := obj["pass"].(bool)
	if err != nil || !ok {
		return costed(verdict{err: "judge: answered without a boolean pass"})
	}
	if k := repeatedKey(resp.Content); k != "" {
		// Decoding kept the last of the two: which one the judge meant
		// is unknown, so it did not decide.
		return costed(verdict{err: fmt.Sprintf("judge: answered with the key %q twice", k)})
	}
	reason, _ := obj["reason"].(string)
	return costed(verdict{pass: pass, reason: "judge: " + reason})
}

// repeatedKey is the first key that appears twice in the top-level JSON
// object content, or "".
func repeatedKey(content string) string {
	dec := json.NewDecoder(strings.NewReader(content))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return ""
		}
		k, _ := t.(string)
		if seen[k] {
			return k
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return ""
		}
	}
	return ""
}

// Timeout is how long one judge call may take.
func (j *Judge) Timeout() time.Duration { return j.cfg.Timeout }
