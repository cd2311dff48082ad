// Package stack is the one definition of an arm — the models it may call
// and the cache, router and contract in front of them — used alike by
// crab run and crab tune (which measure arms) and crab serve (which
// deploys one), so what is measured is what is served.
//
// Validate checks model and arm specs and fills their defaults, returning
// every problem with its path (arms[2].router.small) for the file's loader
// to turn into a "file:line: field: msg" error. Backends makes the models
// of the specs (simulated in process, OpenAI-compatible over HTTP), and
// Build assembles one arm's stack over them.
//
// Layer order, outermost first:
//
//		cache → deadline → router or cascade → contract → retry → concurrency cap → model mux
//
//	  - The cache answers a hit without touching anything below it: no
//	    routing, no validation, no backend call, no timer.
//	  - The deadline (Options.Timeout) covers everything that can wait:
//	    routing, every attempt and re-ask, and the wait for a backend slot.
//	  - The router picks one model (threshold mode, by a scorer of the table)
//	    or the cascade asks the small model first and escalates; an arm has
//	    exactly one of them.
//	  - The contract validates each answer and re-asks or escalates by its
//	    policy; re-asks and escalations go through retry again.
//	  - Retry repeats a failed backend call with doubling backoff.
//	  - The concurrency cap (Options.Concurrency) bounds backend calls in
//	    flight; its wait is queue time.
//
// No layer depends on this order for its own decisions: each learns what
// it needs from its own call's result (the cache checks an answer against
// the contract itself before storing it, whether the contract layer runs
// inside it or not), and none reads or resets another's fields of
// model.Trace. The order is chosen for cost and for what each figure
// means; TestLayerOrderIsNoHiddenRule fails if a layer comes to rely on it.
//
// Cache kinds, stores and scorers come from a Table (Builtin, or one a
// program extends): Validate, Build and the help texts read the same
// entries, and nothing registers itself on import.
//
// crab run sets no deadline and no cap here: its runner is the load
// generator and keeps its own client-side in-flight cap and per-request
// timeout, from each request's send time, so every figure of a run keeps
// its meaning. crab serve sets both.
package stack
