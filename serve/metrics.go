package serve

import (
	"context"
	"errors"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/openai"

	"github.com/prometheus/client_golang/prometheus"
)

// Bucket boundaries, in seconds, comparable with vLLM's production
// metrics: TTFTBuckets are vLLM's vllm:time_to_first_token_seconds
// buckets; LatencyBuckets are vLLM's request latency buckets
// (vllm:e2e_request_latency_seconds, request_queue_time_seconds,
// request_inference_time_seconds) preceded by the sub-0.3 s boundaries of
// the TTFT buckets. Both start with sub-millisecond boundaries from 50 µs,
// because a cache hit answers in a few hundred microseconds and would
// otherwise fall into the first bucket with every fast miss. Every vLLM
// boundary is kept, so the two can be compared bucket by bucket.
var (
	subMillisecond = []float64{0.00005, 0.0001, 0.00025, 0.0005}
	TTFTBuckets    = append(append([]float64(nil), subMillisecond...),
		0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
	)
	LatencyBuckets = append(append([]float64(nil), subMillisecond...),
		0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25,
		0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
	)
)

// metrics are crab serve's Prometheus metrics, registered on the registry
// the server is given (never the global default one).
type metrics struct {
	inFlight       prometheus.Gauge
	requests       *prometheus.CounterVec   // by HTTP status code
	errors         *prometheus.CounterVec   // by error kind
	e2e            *prometheus.HistogramVec // by cache status, model, tenant
	ttft           *prometheus.HistogramVec // by cache status, model
	upstreamTTFT   prometheus.Histogram
	queue          prometheus.Histogram
	modelTime      prometheus.Histogram
	cacheHits      prometheus.Counter
	cacheMisses    prometheus.Counter
	cacheBypasses  prometheus.Counter
	scopeMismatch  prometheus.Counter
	leaks          *prometheus.CounterVec // by leak kind
	routes         *prometheus.CounterVec // by model
	routeFallbacks prometheus.Counter
	contractFails  *prometheus.CounterVec // by rule
	upstreamErrors *prometheus.CounterVec // by status
	tokens         *prometheus.CounterVec // by direction, model, tenant
	cost           *prometheus.CounterVec // by model, tenant
	unpriced       *prometheus.CounterVec // by model, tenant
	panics         *prometheus.CounterVec // by where: request, shadow

	// The same measurements under OpenTelemetry's GenAI semantic
	// convention names (gen_ai.server.request.duration,
	// gen_ai.server.time_to_first_token, gen_ai.client.token.usage), so
	// dashboards built on the convention read crab serve unchanged.
	genaiDuration *prometheus.HistogramVec // by gen_ai_response_model, error_type
	genaiTTFT     *prometheus.HistogramVec // by gen_ai_response_model
	genaiTokens   *prometheus.HistogramVec // by gen_ai_token_type, gen_ai_request_model

	// modelNames are the configured upstream models, the values the
	// model label may take (beside "none" and "other").
	modelNames map[string]bool
	// tenants are the tenants of the keys file in force, the values the
	// tenant label may take (beside "other"); swapped on a keys reload.
	tenants atomic.Pointer[map[string]bool]

	requestsOK prometheus.Counter // requests{code="200"}, resolved once
	bound      sync.Map           // seriesKey → *series
}

// series are the labelled series a request answered by one configured
// model for one tenant touches, bound once: a request reaches them through
// one map lookup instead of hashing its label values into each vector.
// Every one of them exists from the start (newMetrics, setTenants), so
// binding them adds no series.
type series struct {
	e2e, ttft           [3]prometheus.Observer // by the index of the cache label in cacheLabels
	genaiOK, genaiTTFT  prometheus.Observer    // genaiDuration of an answer (no error type)
	cost, unpriced      prometheus.Counter
	tokensIn, tokensOut prometheus.Counter
	genaiIn, genaiOut   prometheus.Observer
}

// seriesKey names a series by its model and tenant label values.
type seriesKey struct{ model, tenant string }

// series returns the series of the model and tenant label values. model
// must be a configured model's label (see charge for the others).
func (m *metrics) series(model, tenant string) *series {
	k := seriesKey{model, tenant}
	if v, ok := m.bound.Load(k); ok {
		return v.(*series)
	}
	b := &series{
		genaiOK: m.genaiDuration.WithLabelValues(model, ""), genaiTTFT: m.genaiTTFT.WithLabelValues(model),
		cost: m.cost.WithLabelValues(model, tenant), unpriced: m.unpriced.WithLabelValues(model, tenant),
		tokensIn: m.tokens.WithLabelValues("prompt", model, tenant), tokensOut: m.tokens.WithLabelValues("generation", model, tenant),
		genaiIn: m.genaiTokens.WithLabelValues("input", model), genaiOut: m.genaiTokens.WithLabelValues("output", model),
	}
	for i, c := range cacheLabels {
		b.e2e[i], b.ttft[i] = m.e2e.WithLabelValues(c, model, tenant), m.ttft.WithLabelValues(c, model)
	}
	v, _ := m.bound.LoadOrStore(k, b)
	return v.(*series)
}

// charge counts the cost of a response by its model and tenant label
// values: its cost when it is measured, else one unpriced response. An
// unpriced response's Cost holds only what its priced attempts cost, so
// adding it would pass a part of an unknown figure off as the whole.
func (m *metrics) charge(mod, tenant string, u model.Usage) {
	var cost, unpriced prometheus.Counter
	if m.modelNames[mod] {
		ss := m.series(mod, tenant)
		cost, unpriced = ss.cost, ss.unpriced
	} else {
		cost, unpriced = m.cost.WithLabelValues(mod, tenant), m.unpriced.WithLabelValues(mod, tenant)
	}
	if u.Unpriced {
		unpriced.Inc()
		return
	}
	add(cost, u.Cost)
}

// answered observes the latency of a request that went through the stack
// (took) and, when its answer was sent (sent), the time to its first byte,
// by cache label, model label, tenant label and error kind.
func (m *metrics) answered(cache, model, tenant, errKind string, took, first float64, sent bool) {
	ci := cacheIndex(cache)
	if !m.modelNames[model] || ci < 0 {
		m.e2e.WithLabelValues(cache, model, tenant).Observe(took)
		m.genaiDuration.WithLabelValues(model, errKind).Observe(took)
		if sent {
			m.ttft.WithLabelValues(cache, model).Observe(first)
			m.genaiTTFT.WithLabelValues(model).Observe(first)
		}
		return
	}
	ss := m.series(model, tenant)
	ss.e2e[ci].Observe(took)
	if errKind == "" {
		ss.genaiOK.Observe(took)
	} else {
		m.genaiDuration.WithLabelValues(model, errKind).Observe(took)
	}
	if sent {
		ss.ttft[ci].Observe(first)
		ss.genaiTTFT.Observe(first)
	}
}

// cacheIndex is the index of a cache label in cacheLabels; -1 for none.
func cacheIndex(label string) int {
	switch label {
	case "hit":
		return 0
	case "miss":
		return 1
	case "bypass":
		return 2
	}
	return -1
}

// Label values beside the configured names.
const (
	noModel = "none" // no model answered (refused or failed before one did)
)

// cacheLabels are the values of the cache label of e2e and ttft.
var cacheLabels = []string{"hit", "miss", "bypass"}

// Error kinds: what went wrong with a request crab did not answer with
// 200, so that a contract 502 and an upstream 502 are told apart.
const (
	ErrKindContract  = "contract"  // the answer broke the output contract
	ErrKindUpstream  = "upstream"  // the upstream failed or refused
	ErrKindTimeout   = "timeout"   // no answer within the request timeout
	ErrKindLimit     = "limit"     // a limit of crab's: per-key in flight, body size, body deadline
	ErrKindAuth      = "auth"      // a missing or unknown API key
	ErrKindInvalid   = "invalid"   // a request crab cannot answer (400, 404, 405)
	ErrKindCancelled = "cancelled" // the client left before the answer
	ErrKindInternal  = "internal"  // crab failed (a recovered panic)
)

var errorKinds = []string{ErrKindContract, ErrKindUpstream, ErrKindTimeout, ErrKindLimit, ErrKindAuth, ErrKindInvalid, ErrKindCancelled, ErrKindInternal}

// errorKind maps crab's error code to its kind.
func errorKind(code string) string {
	switch code {
	case CodeContractViolation:
		return ErrKindContract
	case CodeTimeout:
		return ErrKindTimeout
	case CodeUpstreamAuth, CodeUpstreamRateLimit, CodeUpstreamBusy, CodeUpstreamRejected, CodeUpstreamError:
		return ErrKindUpstream
	case CodeTooManyRequests, CodeTooManyConnections, CodeBodyTimeout, CodeRequestTooLarge:
		return ErrKindLimit
	case CodeInvalidAPIKey:
		return ErrKindAuth
	case CodeInternal:
		return ErrKindInternal
	}
	return ErrKindInvalid
}

// modelLabel is the model label of a configured model name.
func (m *metrics) modelLabel(name string) string {
	if name == "" {
		return noModel
	}
	return bounded(name, m.modelNames)
}

// tenantLabel is the tenant label of a tenant.
func (m *metrics) tenantLabel(t string) string { return bounded(t, *m.tenants.Load()) }

// setTenants makes tenants the tenant label's values and starts every
// series they add at zero.
func (m *metrics) setTenants(tenants []string) {
	set := setOf(tenants...)
	m.tenants.Store(&set)
	models := append(slices.Sorted(maps.Keys(m.modelNames)), otherLabel)
	for _, t := range append(tenants, otherLabel) {
		for _, mod := range append(models, noModel) {
			m.cost.WithLabelValues(mod, t)
			m.unpriced.WithLabelValues(mod, t)
		}
		for _, mod := range models {
			m.tokens.WithLabelValues("prompt", mod, t)
			m.tokens.WithLabelValues("generation", mod, t)
		}
		for _, mod := range append(models, noModel) {
			for _, c := range cacheLabels {
				m.e2e.WithLabelValues(c, mod, t)
			}
		}
	}
}

// Where a recovered panic happened: the panics metric's label.
const (
	panicRequest = "request"
	panicShadow  = "shadow"
)

var panicWheres = []string{panicRequest, panicShadow}

// add adds v to c when it is a figure a counter can take: finite and not
// negative. Figures reach the metrics from every backend, and a counter
// panics on a negative one; the backends check what they report, and
// this keeps a figure that slipped through from costing the process.
func add(c prometheus.Counter, v float64) {
	if v >= 0 && !math.IsInf(v, 1) {
		c.Add(v)
	}
}

// request counts one answered request by status code.
func (m *metrics) request(code int) {
	if code == 200 {
		m.requestsOK.Inc()
		return
	}
	m.requests.WithLabelValues(bounded(strconv.Itoa(code), statusLabels)).Inc()
}

// Every label value comes from a fixed set, so the number of series does
// not depend on what clients, upstreams or model answers contain; a value
// outside its set is counted as "other".
const otherLabel = "other"

var (
	// statusLabels are the HTTP statuses crab serve answers with.
	statusLabels = setOf("200", "400", "401", "404", "405", "408", "413", "429", "499", "500", "502", "503", "504")
	// upstreamStatusLabels are the upstream statuses counted by value.
	upstreamStatusLabels = setOf("400", "401", "403", "404", "408", "409", "413", "422", "429",
		"500", "502", "503", "504", "timeout", "network")
	// leakKinds are the cache's leak kinds of a scope.
	leakKinds = setOf(cache.ScopeLeakKinds()...)
	// contractRules are the rules an answer can break: crab's own (the
	// answer is not JSON, was cut, was refused) and the JSON Schema
	// 2020-12 keywords a contract can use.
	contractRules = setOf(contract.RuleInvalidJSON, contract.RuleTruncated, contract.RuleRefusal, "schema", "unknown",
		"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
		"maxLength", "minLength", "pattern", "format", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
		"contains", "items", "prefixItems", "unevaluatedItems", "maxProperties", "minProperties", "required",
		"dependentRequired", "dependentSchemas", "properties", "patternProperties", "additionalProperties",
		"unevaluatedProperties", "propertyNames", "anyOf", "oneOf", "allOf", "not", "if", "then", "else", "false", "$ref")
)

func setOf(vs ...string) map[string]bool {
	m := make(map[string]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}

// bounded returns v when it is in set, else "other".
func bounded(v string, set map[string]bool) string {
	if set[v] {
		return v
	}
	return otherLabel
}

// violationRule returns the rule of a "pointer: rule: message" violation,
// one of contractRules or "other". The pointer holds property names taken
// from the answer, which may themselves contain ": ", so the rule is the
// first field after a ": " that names a known rule.
func violationRule(v string) string {
	rest := v
	for {
		i := strings.Index(rest, ": ")
		if i < 0 {
			return otherLabel
		}
		rest = rest[i+2:]
		field, _, _ := strings.Cut(rest, ": ")
		if contractRules[field] {
			return field
		}
	}
}

// upstreamErrorLabel is the status label of a failed upstream attempt;
// "" for a call the client cancelled (not the upstream's failure).
func upstreamErrorLabel(err error) string {
	var se *openai.StatusError
	switch {
	case errors.As(err, &se):
		return bounded(strconv.Itoa(se.Status), upstreamStatusLabels)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return ""
	}
	return "network"
}

// storeMetrics exposes the cache store's own counters: errors, and hits
// refused because the shared store could not vouch for them.
func (m *metrics) storeMetrics(reg prometheus.Registerer, st cache.Store, layer cache.Layer) {
	const ns = "crab_serve"
	for _, r := range []struct {
		reason string
		get    func(cache.UntrustedCounts) uint64
	}{{"bad_tag", func(u cache.UntrustedCounts) uint64 { return u.BadTag }},
		{"rolled_back", func(u cache.UntrustedCounts) uint64 { return u.RolledBack }},
		{"contract", func(u cache.UntrustedCounts) uint64 { return u.Contract }}} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "cache_untrusted_total",
			Help:        "Cache entries found but not served because crab could not vouch for them, by reason (bad_tag: integrity tag did not verify; rolled_back: the store's invalidation counter went back; contract: the stored answer no longer meets the contract).",
			ConstLabels: prometheus.Labels{"reason": r.reason}},
			func() float64 { return float64(r.get(layer.Stats().Untrusted)) }))
	}
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "cache_store_errors_total",
			Help: "Cache store calls that failed (a shared store that could not be reached); each served as a miss."},
			func() float64 { return float64(st.Metrics().Errors) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "cache_store_uncertain_total",
			Help: "Cache lookups whose invalidation counter was missing or unreadable in the shared store: the hit was refused (fail closed)."},
			func() float64 { return float64(st.Metrics().Uncertain) }),
	)
}

// BuildInfo names the running binary in crab_build_info.
type BuildInfo struct {
	Version   string // crab's version, e.g. "v1.2.0 (commit abc)"
	GoVersion string
}

func newMetrics(reg prometheus.Registerer, models, tenants []string, build BuildInfo) (*metrics, error) {
	const ns = "crab_serve"
	m := &metrics{
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "requests_in_flight",
			Help: "Chat completion requests being answered."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "requests_total",
			Help: "Chat completion requests answered, by HTTP status code (499: the client left)."}, []string{"code"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "request_errors_total",
			Help: "Chat completion requests not answered with 200, by kind: contract, upstream, timeout, limit, auth, invalid, cancelled, internal."}, []string{"kind"}),
		e2e: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "e2e_request_latency_seconds",
			Help: "Time from receiving a request to the end of its response, by cache status, answering model (none: no model answered) and tenant.", Buckets: LatencyBuckets}, []string{"cache", "model", "tenant"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "time_to_first_token_seconds",
			Help:    "Time from receiving a request to the first content byte sent to the client, by cache status and answering model (answers are checked against the contract before any byte is sent).",
			Buckets: TTFTBuckets}, []string{"cache", "model"}),
		upstreamTTFT: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "upstream_time_to_first_token_seconds",
			Help: "Time from the start of the final upstream call to its first content chunk.", Buckets: TTFTBuckets}),
		queue: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "request_queue_time_seconds",
			Help: "Time a request waited for a free upstream slot (the concurrency cap), all attempts.", Buckets: LatencyBuckets}),
		modelTime: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "request_model_time_seconds",
			Help: "Time spent inside upstream model calls, all attempts (requests that called a model).", Buckets: LatencyBuckets}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "cache_hits_total",
			Help: "Requests answered from the cache."}),
		cacheMisses: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "cache_misses_total",
			Help: "Requests the cache could not answer."}),
		cacheBypasses: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "cache_bypasses_total",
			Help: "Requests that could not be keyed safely and skipped the cache."}),
		scopeMismatch: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "cache_scope_mismatches_total",
			Help: "Cache hits refused because the stored answer was built for another scope (served as misses)."}),
		leaks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "cache_leaks_total",
			Help: "Cache hits served although built for another scope (only with check_on_hit: false), by leak kind."}, []string{"kind"}),
		routes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "route_decisions_total",
			Help: "Routing decisions of the difficulty router, by chosen model."}, []string{"model"}),
		routeFallbacks: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "route_scorer_fallbacks_total",
			Help: "Routing decisions made on the scorer's fallback score because the scorer failed (a scoring service's error or timeout)."}),
		contractFails: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "contract_failures_total",
			Help: "Answers refused because they break the contract (after the policy's re-ask or escalation), by rule broken."}, []string{"kind"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "upstream_errors_total",
			Help: "Failed upstream calls, every attempt, by HTTP status (network: no status; timeout: the deadline)."}, []string{"status"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tokens_total",
			Help: "Tokens billed by upstream models, every attempt, by direction (prompt, generation), model called and tenant."}, []string{"direction", "model", "tenant"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "cost_total",
			Help: "Cost of the requests answered or failed, every attempt included (in the configured price units), by answering model and tenant: the sum of the records' cost. Responses whose cost is unmeasured are left out (crab_serve_unpriced_total)."}, []string{"model", "tenant"}),
		unpriced: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "unpriced_total",
			Help: "Responses whose cost is unmeasured: their model declares no price; left out of crab_serve_cost_total. By answering model and tenant."}, []string{"model", "tenant"}),
	}
	m.panics = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "panics_total",
		Help: "Panics recovered (and logged) without the process dying, by where: request (a request's handler; answered with 500) or shadow (a shadow worker; the mirrored request is dropped)."},
		[]string{"where"})
	for _, w := range panicWheres {
		m.panics.WithLabelValues(w)
	}
	genai := prometheus.Labels{"gen_ai_operation_name": "chat"}
	m.genaiDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gen_ai_server_request_duration_seconds", ConstLabels: genai,
		Help: "OpenTelemetry GenAI gen_ai.server.request.duration: crab_serve_e2e_request_latency_seconds by answering model and error type (empty: answered with 200).", Buckets: LatencyBuckets},
		[]string{"gen_ai_response_model", "error_type"})
	m.genaiTTFT = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gen_ai_server_time_to_first_token_seconds", ConstLabels: genai,
		Help: "OpenTelemetry GenAI gen_ai.server.time_to_first_token: crab_serve_time_to_first_token_seconds by answering model.", Buckets: TTFTBuckets},
		[]string{"gen_ai_response_model"})
	m.genaiTokens = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gen_ai_client_token_usage", ConstLabels: genai,
		Help:    "OpenTelemetry GenAI gen_ai.client.token.usage: tokens of every upstream call, by type (input, output) and model called.",
		Buckets: prometheus.ExponentialBuckets(1, 4, 14)}, []string{"gen_ai_token_type", "gen_ai_request_model"})
	build.GoVersion = firstNonEmpty(build.GoVersion, runtime.Version())
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "crab_build_info",
		Help: "Always 1; the labels name the running crab."}, []string{"version", "goversion"})
	buildInfo.WithLabelValues(firstNonEmpty(build.Version, "unknown"), build.GoVersion).Set(1)
	m.modelNames = setOf(models...)
	m.requestsOK = m.requests.WithLabelValues("200")
	// Every known label value starts at zero, so a dashboard shows 0
	// rather than no data before the first event.
	for code := range statusLabels {
		m.requests.WithLabelValues(code)
	}
	for _, k := range errorKinds {
		m.errors.WithLabelValues(k)
	}
	for k := range leakKinds {
		m.leaks.WithLabelValues(k)
	}
	for k := range contractRules {
		m.contractFails.WithLabelValues(k)
	}
	for st := range upstreamStatusLabels {
		m.upstreamErrors.WithLabelValues(st)
	}
	for _, mod := range models {
		m.routes.WithLabelValues(mod)
		for _, c := range cacheLabels {
			m.ttft.WithLabelValues(c, mod)
		}
		m.genaiTTFT.WithLabelValues(mod)
		m.genaiDuration.WithLabelValues(mod, "")
		m.genaiTokens.WithLabelValues("input", mod)
		m.genaiTokens.WithLabelValues("output", mod)
	}
	m.setTenants(tenants)
	for _, c := range []prometheus.Collector{m.inFlight, m.requests, m.errors, m.e2e, m.ttft, m.upstreamTTFT, m.queue, m.modelTime,
		m.cacheHits, m.cacheMisses, m.cacheBypasses, m.scopeMismatch, m.leaks, m.routes, m.routeFallbacks, m.contractFails,
		m.upstreamErrors, m.tokens, m.cost, m.unpriced, m.panics, m.genaiDuration, m.genaiTTFT, m.genaiTokens, buildInfo} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
