package stack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/cache/semantic"
	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/router"
)

// Options are what an arm's stack is built with beside its spec.
type Options struct {
	// Contract is the compiled output contract; nil builds no contract
	// layer (a serve configuration without one).
	Contract *contract.Contract
	// Retry is the policy for failed model calls (MaxAttempts 0 is 1).
	Retry RetrySpec
	// Timeout is the deadline of one request below the cache; 0 sets
	// none (crab run times each request itself, from its send time).
	Timeout time.Duration
	// Concurrency caps the backend calls in flight, innermost, and the
	// wait is queue time; 0 sets no cap (crab run caps requests in flight
	// itself, as a load generator does).
	Concurrency int
	// Store is the base of the cache store's configuration: context,
	// key prefix, delete on close. The spec's store kind, address and
	// capacity are filled in. Its prefix is the deployment's default,
	// replaced by the spec's redis_prefix when that is set.
	Store cache.StoreConfig
	// PassPrefix follows the deployment's prefix in every key: crab run
	// gives each pass its own, so passes never share entries.
	PassPrefix string
	// Upstream is the identity of the models the stack answers from
	// (UpstreamID): a shared store's keys and every entry's tag carry it,
	// so a changed upstream never serves the old one's answers.
	Upstream string
	// WaitForStore makes every cache miss answer only once its entry is
	// visible, whatever the spec's wait_for_store says: crab run sets it,
	// so a measured pass never misses an entry that is merely still in
	// flight. Unset, the spec decides, and by default a miss answers
	// before its entry is visible, taking the store's apply time off the
	// response path (crab serve).
	WaitForStore bool
	// Now is the clock of the concurrency cap; nil means time.Now.
	Now func() time.Time
}

// Arm is an arm's built stack and what must be released after it.
type Arm struct {
	Spec ArmSpec
	// Model is the whole stack, outermost layer first (see the package
	// documentation).
	Model model.Model
	// Judge is the same backends behind the contract and retry layers but
	// no cache and no router: the runner asks it what the other model
	// would have answered to judge misroutes. Nil without a router.
	Judge model.Model
	// Cache is nil when the arm has no cache; Store is nil without one
	// and for a semantic cache (which keeps its own index).
	Cache cache.Layer
	Store cache.Store

	metrics func(cache.Layer, *CacheMetrics) // the cache kind's own counters
}

// Close releases the cache store (a shared store's keys go with it when
// it was opened with DeleteOnClose). It is safe to call more than once.
func (a *Arm) Close() error {
	if a.Store != nil {
		a.Store.Close()
		a.Store = nil
	}
	return nil
}

// CacheMetrics is what a cache arm's pass adds to the manifest, so a low
// hit rate can be explained (dropped or rejected sets, evictions).
type CacheMetrics struct {
	Key   string             `json:"key"`
	Cache cache.Stats        `json:"cache"`
	Store cache.StoreMetrics `json:"store"`
	// Semantic holds a semantic cache's own counters (similar hits,
	// embedding calls, errors and time).
	Semantic *semantic.Stats `json:"semantic,omitempty"`
}

// CacheMetrics returns the cache's and its store's counters so far; nil
// when the arm has no cache.
func (a *Arm) CacheMetrics() *CacheMetrics {
	if a.Cache == nil {
		return nil
	}
	m := &CacheMetrics{Key: a.Cache.Key().String(), Cache: a.Cache.Stats()}
	if a.Store != nil {
		m.Store = a.Store.Metrics()
	}
	if a.metrics != nil {
		a.metrics(a.Cache, m)
	}
	return m
}

// Build assembles the stack of spec over backends (see the package
// documentation for the layer order) from the kinds of Builtin. The spec
// must have passed Validate. A cache arm opens a fresh store: Close the
// arm when done with it.
func Build(spec ArmSpec, backends map[string]model.Model, o Options) (*Arm, error) {
	return Builtin().Build(spec, backends, o)
}

// Build is the package's Build from the table's kinds, stores and
// scorers; the spec must have passed t.Validate.
func (t *Table) Build(spec ArmSpec, backends map[string]model.Model, o Options) (*Arm, error) {
	def := spec.Model
	if spec.Router != nil {
		def = spec.Router.Large
	}
	mux, err := model.NewMux(def, backends)
	if err != nil {
		return nil, err
	}
	base := withCaller(withInstructions(mux, spec.Instructions), spec.Name)
	var inner []model.Middleware // contract → retry → concurrency cap
	if o.Contract != nil {
		cpol := ContractSpec{Policy: string(contract.PolicyFail)}
		if spec.Contract != nil {
			cpol = *spec.Contract
			if cpol.Policy == "" {
				cpol.Policy = string(contract.PolicyFail)
			}
		}
		cmw, err := contract.New(o.Contract, contract.Config{Policy: contract.Policy(cpol.Policy), EscalateTo: cpol.EscalateTo})
		if err != nil {
			return nil, err
		}
		inner = append(inner, cmw)
	}
	inner = append(inner, model.Retry(o.Retry.Policy()))
	judgeLayers := slices.Clip(inner) // the judge is evaluation overhead: it takes no slot of the cap
	if o.Concurrency > 0 {
		now := o.Now
		if now == nil {
			now = time.Now
		}
		inner = append(inner, limiter(make(chan struct{}, o.Concurrency), now))
	}

	arm := &Arm{Spec: spec}
	var outer []model.Middleware // cache → deadline → router
	if cs := spec.Cache; cs != nil {
		if err := t.cacheLayer(arm, cs, o); err != nil {
			return nil, err
		}
		outer = append(outer, arm.Cache.Middleware())
	}
	if o.Timeout > 0 {
		outer = append(outer, deadline(o.Timeout))
	}
	if rs := spec.Router; rs != nil {
		rmw, err := t.routerLayer(rs)
		if err != nil {
			arm.Close()
			return nil, err
		}
		outer = append(outer, rmw)
		arm.Judge = model.Chain(base, judgeLayers...)
	}
	arm.Model = model.Chain(base, append(outer, inner...)...)
	return arm, nil
}

// cacheLayer builds the arm's cache layer through its kind's entry, over
// a fresh store unless the kind keeps its own index.
func (t *Table) cacheLayer(arm *Arm, cs *CacheSpec, o Options) error {
	kind, ok := t.Kind(cs.Kind)
	if !ok {
		return fmt.Errorf("%w %q (want %s)", ErrUnknownKind, cs.Kind, strings.Join(t.KindNames(), ", "))
	}
	fields, err := cache.ParseFields(cs.Key)
	if err != nil {
		return err
	}
	check := cs.CheckOnHit == nil || *cs.CheckOnHit
	cc := cache.Config{Fields: fields, TTL: cs.TTL.Std(), CheckOnHit: check, WaitForStore: o.WaitForStore || cs.WaitForStore}
	sc := storeConfig(cs, o)
	cc.Namespace = sc.Prefix
	if a := cs.Access; a != nil {
		cc.TagKey = a.TagKey
	}
	if k := o.Contract; k != nil {
		cc.Validate = func(content, finish string) bool { return len(k.Validate(content, finish)) == 0 }
		cc.Contract = k.Hash()
	}
	var store cache.Store
	if kind.OwnIndex == "" {
		if store, err = t.OpenStore(cs.Store, sc); err != nil {
			return err
		}
	}
	c, err := kind.New(cs, cc, store)
	if err != nil {
		if store != nil {
			store.Close()
		}
		return err
	}
	arm.Cache, arm.Store, arm.metrics = c, store, kind.Metrics
	return nil
}

// storeConfig is the arm's store configuration: the base of o, the spec's
// address, capacity and credentials, and the key prefix naming the
// deployment (the spec's redis_prefix before the base's, when set) and
// the upstream.
func storeConfig(cs *CacheSpec, o Options) cache.StoreConfig {
	sc := o.Store
	sc.Addr, sc.MaxCost, sc.Username = cs.RedisAddr, cs.MaxCost, cs.RedisUsername
	if a := cs.Access; a != nil {
		sc.Password, sc.TLS, sc.Tagged = a.RedisPassword, a.TLS, len(a.TagKey) > 0
	}
	if cs.RedisPrefix != "" {
		sc.Prefix = cs.RedisPrefix
	}
	sc.Prefix += o.PassPrefix
	if o.Upstream != "" {
		sc.Prefix += "u" + o.Upstream + ":"
	}
	return sc
}

// withInstructions gives every request in a shortened output mode the
// arm's own instruction for that mode, right above the backends, so that
// the judge's shadow calls and every retry carry it too.
func withInstructions(next model.Model, ins map[string]string) model.Model {
	if len(ins) == 0 {
		return next
	}
	return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if v := ins[req.Mode]; v != "" && req.Instruction == "" {
			req = req.Clone()
			req.Instruction = v
		}
		return next.Complete(ctx, req)
	})
}

// withCaller names the arm as the caller of every backend call that does
// not name one already: two arms asking the same question are two calls,
// each with its own draw of a varying answer and its own line in a
// simulated model's call log.
func withCaller(next model.Model, name string) model.Model {
	if name == "" {
		return next
	}
	return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller == "" {
			req = req.Clone()
			req.Caller = name
		}
		return next.Complete(ctx, req)
	})
}

// routerLayer builds the arm's one routing policy: the cascade, or the
// threshold router over its scorer.
func (t *Table) routerLayer(rs *RouterSpec) (model.Middleware, error) {
	if rs.Mode == router.PolicyCascade {
		return router.NewCascade(router.CascadeConfig{Small: rs.Small, Large: rs.Large, Confidence: rs.Confidence})
	}
	scorer, err := t.NewScorer(rs.Scorer)
	if err != nil {
		return nil, err
	}
	return router.New(router.Config{Threshold: rs.Threshold, Small: rs.Small, Large: rs.Large}, scorer)
}

// Info is what the stack's layers report about one request beside its
// response: the time spent waiting for a backend slot, and whether the
// stack's deadline passed.
type Info struct {
	Queue    time.Duration
	TimedOut bool
	// SlotWaits counts the backend calls that found every slot of the
	// concurrency cap taken and had to wait.
	SlotWaits int
}

type infoKey struct{}

// WithInfo returns a context under which the stack fills the returned Info.
func WithInfo(ctx context.Context) (context.Context, *Info) {
	info := &Info{}
	return context.WithValue(ctx, infoKey{}, info), info
}

// deadline gives the rest of the stack the request's timeout. It sits
// right inside the cache, whose in-process lookup never blocks, so a hit
// costs no timer; everything that can wait (router, contract, retries,
// the concurrency cap, backend calls) runs under the deadline.
func deadline(timeout time.Duration) model.Middleware {
	return func(next model.Model) model.Model {
		return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			resp, err := next.Complete(ctx, req)
			if ctx.Err() == context.DeadlineExceeded {
				if info, ok := ctx.Value(infoKey{}).(*Info); ok {
					info.TimedOut = true
				}
			}
			return resp, err
		})
	}
}

// limiter caps the backend calls in flight; the wait is queue time.
func limiter(sem chan struct{}, now func() time.Time) model.Middleware {
	return func(next model.Model) model.Model {
		return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			start := now()
			waited := false
			select {
			case sem <- struct{}{}:
			default:
				waited = true
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			defer func() { <-sem }()
			if info, ok := ctx.Value(infoKey{}).(*Info); ok {
				info.Queue += now().Sub(start)
				if waited {
					info.SlotWaits++
				}
			}
			return next.Complete(ctx, req)
		})
	}
}
