package audit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/model"
)

// offsetClock is wall-clock time plus a jump the scenario lines control.
type offsetClock struct{ off atomic.Int64 }

func (c *offsetClock) Now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *offsetClock) Advance(d time.Duration) { c.off.Add(int64(d)) }

// auditBackend wraps the audited backend: it forces each line's fault,
// holds requests until their release, and stamps every answer's Model with
// a provenance number ("large#17") so that a hit, through any store, can be
// traced to the request that built it.
type auditBackend struct {
	next  model.Model
	lines map[string]*ScenarioLine

	mu    sync.Mutex
	holds map[string]*heldRequest
	built []*model.Request // provenance number → request
}

type heldRequest struct {
	entered, release, done chan struct{}
	enterOnce, relOnce     sync.Once
}

func (h *heldRequest) releaseOnce() { h.relOnce.Do(func() { close(h.release) }) }

func newAuditBackend(next model.Model, lines []ScenarioLine) *auditBackend {
	b := &auditBackend{next: next, lines: map[string]*ScenarioLine{}, holds: map[string]*heldRequest{}}
	for i := range lines {
		b.lines[lines[i].ID] = &lines[i]
	}
	return b
}

// hold makes the backend call of request id wait for the returned release.
func (b *auditBackend) hold(id string) *heldRequest {
	h := &heldRequest{entered: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{})}
	b.mu.Lock()
	b.holds[id] = h
	b.mu.Unlock()
	return h
}

// Complete implements model.Model.
func (b *auditBackend) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	b.mu.Lock()
	h := b.holds[req.TaskID]
	b.mu.Unlock()
	if h != nil {
		h.enterOnce.Do(func() { close(h.entered) })
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	fault := ""
	if l := b.lines[req.TaskID]; l != nil {
		fault = l.Fault
	}
	if fault == FaultError {
		return &model.Response{Trace: model.Trace{Attempts: 1}}, fmt.Errorf("%w: fault forced by the scenario", model.ErrBackend)
	}
	resp, err := b.next.Complete(ctx, req)
	if err != nil || resp == nil {
		return resp, err
	}
	switch fault {
	case FaultTruncate:
		resp.Content = resp.Content[:len(resp.Content)/2]
		resp.FinishReason = model.FinishLength
	case FaultContract:
		// What the contract layer reports for an answer that breaks it.
		resp.Trace.Validated, resp.Trace.ContractOK = true, false
		resp.Trace.Violations = []string{"/evidence: minItems: want at least 1 item (forced by the scenario)"}
	}
	b.mu.Lock()
	n := len(b.built)
	b.built = append(b.built, req.Clone())
	b.mu.Unlock()
	resp.Model = resp.Model + "#" + strconv.Itoa(n)
	return resp, nil
}

// judge labels a hit served to req from its provenance: the leak kind
// (scope first, then system prompt and history of the request that built
// it) and, for an answer of the right scope and conversation, whether it
// was built for another request.
func (b *auditBackend) judge(resp *model.Response, req *model.Request) (leak string, other bool) {
	origin, ok := b.origin(resp.Model)
	if k := cache.LeakKind(resp.Scope, req.Scope); k != "" {
		return k, false
	}
	if !ok {
		return "", true
	}
	if k := cache.ConversationLeak(cache.ConversationOf(origin), cache.ConversationOf(req)); k != "" {
		return k, false
	}
	return "", !sameRequest(origin, req)
}

// origin returns the request an answer with this Model stamp was built for.
func (b *auditBackend) origin(stamp string) (*model.Request, bool) {
	i := strings.LastIndexByte(stamp, '#')
	if i < 0 {
		return nil, false
	}
	n, err := strconv.Atoi(stamp[i+1:])
	if err != nil {
		return nil, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n < 0 || n >= len(b.built) {
		return nil, false
	}
	return b.built[n], true
}
