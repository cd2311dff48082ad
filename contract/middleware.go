package contract

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crab-testbed/crab/model"
)

// ErrViolation is wrapped by the error the middleware returns for an answer
// that fails the contract (after any re-ask or escalation). The runner maps
// it to the outcome contract_fail; the response returned beside it carries
// the trace, usage and violations of every attempt.
var ErrViolation = errors.New("contract: answer violates the contract")

// ErrBadConfig is wrapped by New's errors: a policy crab does not know, or
// an escalation without a model to escalate to. It is bad input (exit 2).
var ErrBadConfig = errors.New("contract: bad middleware config")

// Policy says what the middleware does with an answer that fails the contract.
type Policy string

// Policies. Whatever the policy, an answer that still fails the contract is
// returned with an error wrapping ErrViolation, never as a success.
const (
	PolicyFail     Policy = "fail"     // fail the request at once
	PolicyReask    Policy = "reask"    // ask the same model once more; both attempts' cost counts
	PolicyEscalate Policy = "escalate" // ask Config.EscalateTo once more; both attempts' cost counts
)

// Config configures the contract middleware.
type Config struct {
	// Policy on a violation. Empty means PolicyFail, the strictest and the
	// one that adds no cost.
	Policy Policy
	// EscalateTo is the backend asked after a violation under
	// PolicyEscalate, e.g. "large". Required with that policy, ignored with
	// the others.
	EscalateTo string
	// Now is the clock used to time validation (Trace.ValidateDur). Nil
	// means time.Now; tests inject a fake.
	Now func() time.Time
}

// New returns the contract middleware. It sends c with every request
// (Request.Contract and ContractHash, so the backend receives the schema as
// its response format and a cache outside this layer keys on its hash),
// validates every answer, records the result in the trace, and applies
// cfg.Policy to an answer that fails. Errors from the layers below are
// returned unchanged with any partial response: they are not contract
// failures. An answer that fails the contract is never returned with a nil
// error.
func New(c *Contract, cfg Config) (model.Middleware, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: no contract", ErrBadConfig)
	}
	switch cfg.Policy {
	case "":
		cfg.Policy = PolicyFail
	case PolicyFail, PolicyReask:
	case PolicyEscalate:
		if cfg.EscalateTo == "" {
			return nil, fmt.Errorf("%w: policy %q needs a model to escalate to", ErrBadConfig, cfg.Policy)
		}
	default:
		return nil, fmt.Errorf("%w: unknown policy %q (want %q, %q or %q)", ErrBadConfig, cfg.Policy, PolicyFail, PolicyReask, PolicyEscalate)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return func(next model.Model) model.Model {
		return &layer{c: c, cfg: cfg, next: next}
	}, nil
}

// layer is the contract middleware around one next Model.
type layer struct {
	c    *Contract
	cfg  Config
	next model.Model
}

var _ model.Model = (*layer)(nil)

// Complete sends the request with the contract, validates the answer and
// applies the policy.
func (l *layer) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	r := req.Clone()
	r.Contract = l.c.raw
	r.ContractHash = l.c.hash

	first, err := l.next.Complete(ctx, r)
	if err != nil {
		return first, err
	}
	first, vs := l.check(first)
	if len(vs) == 0 {
		return first, nil
	}
	if l.cfg.Policy == PolicyFail {
		return first, violationError(vs)
	}

	again := r.Clone()
	again.Attempt = r.Attempt + 1
	escalated := false
	if l.cfg.Policy == PolicyEscalate {
		again.Model = l.cfg.EscalateTo
		// Asking the model that already answered is a re-ask, not an escalation.
		answeredBy := first.Model
		if answeredBy == "" {
			answeredBy = r.Model
		}
		escalated = answeredBy != l.cfg.EscalateTo
	} else {
		again.System = reaskSystem(r.System, vs)
	}

	second, err := l.next.Complete(ctx, again)
	if err != nil {
		out := model.Accumulate(first, second)
		if out != first {
			// No answer of the second attempt was checked; the trace says
			// why it was made: the first answer's violations.
			out.Trace.Validated = true
			out.Trace.ContractOK = false
			out.Trace.Violations = first.Trace.Violations
		}
		out.Trace.Escalated = out.Trace.Escalated || escalated
		return out, err
	}
	second, vs = l.check(second)
	second = model.Accumulate(first, second)
	second.Trace.Escalated = second.Trace.Escalated || escalated
	if len(vs) > 0 {
		return second, violationError(vs)
	}
	return second, nil
}

// check validates resp and writes the contract's fields of its trace. A nil
// response without an error is treated as an empty answer, so it fails the
// contract instead of slipping through.
func (l *layer) check(resp *model.Response) (*model.Response, []Violation) {
	if resp == nil {
		resp = &model.Response{}
	}
	start := l.cfg.Now()
	vs := l.c.Validate(resp.Content, resp.FinishReason)
	resp.Trace.ValidateDur += l.cfg.Now().Sub(start)
	resp.Trace.Validated = true
	resp.Trace.ContractOK = len(vs) == 0
	resp.Trace.Violations = nil
	if len(vs) > 0 {
		resp.Trace.Violations = make([]string, len(vs))
		for i, v := range vs {
			resp.Trace.Violations[i] = v.String()
		}
	}
	return resp, vs
}

// violationError wraps ErrViolation with the first violation and a count.
func violationError(vs []Violation) error {
	if len(vs) == 1 {
		return fmt.Errorf("%w: %s", ErrViolation, vs[0])
	}
	return fmt.Errorf("%w: %s (and %d more)", ErrViolation, vs[0], len(vs)-1)
}

// maxReaskListed bounds the violations named in a re-ask instruction.
const maxReaskListed = 5

// reaskSystem appends to the system prompt an instruction naming what the
// previous answer got wrong (pointer and rule only: the answer's own text is
// not echoed back).
func reaskSystem(system string, vs []Violation) string {
	var b strings.Builder
	b.WriteString(system)
	if system != "" {
		b.WriteString("\n\n")
	}
	b.WriteString("Your previous answer did not meet the required JSON schema (")
	for i, v := range vs {
		if i == maxReaskListed {
			fmt.Fprintf(&b, "; and %d more", len(vs)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		p := v.Pointer
		if p == "" {
			p = "(root)"
		}
		b.WriteString(p + ": " + v.Rule)
	}
	b.WriteString("). Answer again with one complete JSON object that meets the schema.")
	return b.String()
}
