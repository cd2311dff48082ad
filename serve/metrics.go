package serve

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/model/openai"

	"github.com/prometheus/client_golang/prometheus"
)

// Bucket boundaries, in seconds, comparable with vLLM's production
// metrics: TTFTBuckets are vLLM's vllm:time_to_first_token_seconds
// buckets; LatencyBuckets are vLLM's request latency buckets
// (vllm:e2e_request_latency_seconds, request_queue_time_seconds,
// request_inference_time_seconds) preceded by the sub-0.3 s boundaries of
// the TTFT buckets, because a cache hit answers in microseconds and would
// otherwise fall into vLLM's first bucket with every fast miss. Every vLLM
// boundary is kept, so the two can be compared bucket by bucket.
var (
	TTFTBuckets = []float64{
		0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
	}
	LatencyBuckets = []float64{
		0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25,
		0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
	}
)

// metrics are crab serve's Prometheus metrics, registered on the registry
// the server is given (never the global default one).
type metrics struct {
	inFlight       prometheus.Gauge
	requests       *prometheus.CounterVec   // by HTTP status code
	e2e            *prometheus.HistogramVec // by cache status
	ttft           *prometheus.HistogramVec // by cache status
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
	tokens         *prometheus.CounterVec // by direction

	// modelNames are the configured upstream models, the values the
	// model label may take (beside "other").
	modelNames map[string]bool

	// Children resolved once, so the common path does no label lookup.
	requestsOK              prometheus.Counter             // requests{code="200"}
	e2eBy, ttftBy           map[string]prometheus.Observer // by cache label
	promptTok, generatedTok prometheus.Counter             // tokens by direction
}

// cacheLabels are the values of the cache label of e2e and ttft.
var cacheLabels = []string{"hit", "miss", "bypass"}

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
	// leakKinds are the cache's leak kinds.
	leakKinds = setOf(cache.LeakCrossTenant, cache.LeakPermission, cache.LeakLanguage, cache.LeakStale)
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

func newMetrics(reg prometheus.Registerer, models []string) (*metrics, error) {
	const ns = "crab_serve"
	m := &metrics{
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "requests_in_flight",
			Help: "Chat completion requests being answered."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "requests_total",
			Help: "Chat completion requests answered, by HTTP status code (499: the client left)."}, []string{"code"}),
		e2e: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "e2e_request_latency_seconds",
			Help: "Time from receiving a request to the end of its response, by cache status.", Buckets: LatencyBuckets}, []string{"cache"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "time_to_first_token_seconds",
			Help:    "Time from receiving a request to the first content byte sent to the client, by cache status (answers are checked against the contract before any byte is sent).",
			Buckets: TTFTBuckets}, []string{"cache"}),
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
			Help: "Tokens billed by upstream models, every attempt, by direction (prompt, generation)."}, []string{"direction"}),
	}
	m.modelNames = setOf(models...)
	m.requestsOK = m.requests.WithLabelValues("200")
	m.e2eBy, m.ttftBy = map[string]prometheus.Observer{}, map[string]prometheus.Observer{}
	for _, l := range cacheLabels {
		m.e2eBy[l], m.ttftBy[l] = m.e2e.WithLabelValues(l), m.ttft.WithLabelValues(l)
	}
	m.promptTok, m.generatedTok = m.tokens.WithLabelValues("prompt"), m.tokens.WithLabelValues("generation")
	for _, c := range []prometheus.Collector{m.inFlight, m.requests, m.e2e, m.ttft, m.upstreamTTFT, m.queue, m.modelTime,
		m.cacheHits, m.cacheMisses, m.cacheBypasses, m.scopeMismatch, m.leaks, m.routes, m.routeFallbacks, m.contractFails, m.upstreamErrors, m.tokens} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
