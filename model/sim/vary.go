package sim

import (
	"github.com/cespare/xxhash/v2"
	"github.com/crab-testbed/crab/internal/splitmix"
	"github.com/crab-testbed/crab/model"
)

// Vary makes a share of tasks answer differently from call to call, as a
// real model does at a temperature above 0 (and a batching engine even at
// 0): a pass on one call, a fail on the next.
//
// Which tasks vary is drawn once per request content (text and scope)
// from the model's seed, so a varying task varies on every model of a run
// and on every call. On each call of a varying task the model misreads it
// with probability Flip, independently of every other call, and
// otherwise answers it right; a task that does not vary keeps the answer
// of its error model on every call. A task without expected values (see
// Oracle) has nothing to get wrong and does not vary.
//
// A call's draw is seeded from everything that tells one call from
// another — the model's seed and name, the request's seed (the repeat),
// attempt, caller (the arm), task id, text and scope — so two arms, two
// repeats or a retry draw independently, and a run reproduces its draws
// under any scheduling. A cache hit serves the stored answer, drawn once.
type Vary struct {
	// Share of tasks whose answer varies, in [0, 1]; 0 turns varying off
	// (every answer deterministic).
	Share float64 `yaml:"share" json:"share"`
	// Flip is the probability, in [0, 1], that a call of a varying task is
	// answered wrong; 0 with a Share above 0 means DefaultFlip.
	Flip float64 `yaml:"flip" json:"flip"`
}

// The varying answers crab's experiments and crab sim-server give a
// simulated model unless it says otherwise: 5 % of tasks, each wrong on
// half of its calls, so outcomes vary like a real model's without drowning
// the differences between arms. Config's zero Vary (the package's Small
// and Large) stays deterministic.
const (
	DefaultShare = 0.05
	DefaultFlip  = 0.5
)

// DefaultVary is Vary{Share: DefaultShare, Flip: DefaultFlip}.
func DefaultVary() Vary { return Vary{Share: DefaultShare, Flip: DefaultFlip} }

// Filled is v with its default filled in: Flip DefaultFlip when a Share
// is given without one.
func (v Vary) Filled() Vary {
	if v.Share > 0 && v.Flip == 0 {
		v.Flip = DefaultFlip
	}
	return v
}

// Enabled reports whether any task varies.
func (v Vary) Enabled() bool { return v.Share > 0 && v.Flip > 0 }

// Varies reports whether req's task is one whose answer varies from call
// to call (see Vary).
func (m *Model) Varies(req *model.Request) bool { return m.varies(req) }

// varies reports whether req's task is one whose answer varies: a draw
// from the model's seed and the request's content and scope only, so it
// holds for every call, repeat, arm and model of a run.
func (m *Model) varies(req *model.Request) bool {
	if !m.cfg.Vary.Enabled() {
		return false
	}
	var d xxhash.Digest
	d.Reset()
	hashStr(&d, "vary")
	hashU64(&d, uint64(m.cfg.Seed))
	hashStr(&d, req.Text)
	hashScope(&d, &req.Scope)
	return splitmix.New(d.Sum64()).Float64() < m.cfg.Vary.Share
}

// callRNG seeds the draw of one call of a varying task: the model, the
// repeat, the attempt, the caller, the task and its content, and nonce
// (0 in process; crab sim-server numbers calls it cannot tell apart).
func (m *Model) callRNG(req *model.Request, nonce uint64) splitmix.Rand {
	var d xxhash.Digest
	d.Reset()
	hashStr(&d, "call")
	hashU64(&d, uint64(m.cfg.Seed))
	hashStr(&d, m.cfg.Name)
	hashU64(&d, uint64(req.Seed))
	hashU64(&d, uint64(req.Attempt))
	hashStr(&d, req.Caller)
	hashStr(&d, req.TaskID)
	hashStr(&d, req.Text)
	hashScope(&d, &req.Scope)
	hashU64(&d, nonce)
	return *splitmix.New(d.Sum64())
}

func hashScope(d *xxhash.Digest, s *model.Scope) {
	hashStr(d, s.Tenant)
	hashStr(d, s.Permission)
	hashStr(d, s.Lang)
	hashStr(d, s.DocVersion)
}
