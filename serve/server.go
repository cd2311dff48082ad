// Package serve is crab's OpenAI-compatible proxy: it answers
// POST /v1/chat/completions (streaming and not) and GET /v1/models by
// running crab's stack — scoped cache, difficulty router or cascade, output
// contract, retries — in front of OpenAI-compatible backends (or, for an
// arm of an experiment, its simulated models in process), so the stack
// can be tried on live traffic. GET /metrics serves Prometheus metrics and
// GET /healthz a liveness check.
//
// Identity: the API key (Authorization: Bearer KEY) names the tenant and
// permission, from the keys file; an unknown key gets 401. The client can
// never set them: X-Crab-Tenant and X-Crab-Permission from a client are
// ignored. The language and document version come from the X-Crab-Lang and
// X-Crab-Doc-Version headers, or the metadata keys lang and doc_version,
// or the key's defaults, and are validated. The output mode comes from
// X-Crab-Mode (or metadata mode), else the configured mode.
//
// Models: a client asks for a configured model by name (the router is
// bypassed: an explicit choice), or for "auto" to let the router choose
// (the default model without a router).
//
// Every answer says what happened in response headers: X-Crab-Cache (HIT,
// MISS or BYPASS), X-Crab-Model, X-Crab-Route-Score (the router's score,
// or "none"), X-Crab-Contract (ok, fail or none) and X-Crab-Attempts.
// Because an answer must meet the contract before any of it is sent, a
// streamed answer (cache hits included) is streamed once it is complete
// and checked; an answer that breaks the contract is never sent with 200
// but, after the configured re-ask or escalation, as 502 in the OpenAI
// error format. Clients get crab's own errors (OpenAI format, a stable code
// from the Code constants, the request id); the upstream's status and
// message go to the log, credentials masked. Errors are never cached.
//
// Limits (see Limits and Config): the key is checked from the headers
// before any body is read, a body must arrive within body_timeout, a key
// may have max_in_flight_per_key requests in flight, and ReloadKeys (on
// SIGHUP) swaps the keys file in without dropping a connection.
package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/internal/redact"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/openai"
	"github.com/crab-testbed/crab/stack"
)

// AutoModel is the model name that asks the router to choose.
const AutoModel = "auto"

// Options are what a Server is given beside its setup.
type Options struct {
	// Registry receives the server's metrics and is served on /metrics.
	// Required: crab never uses the global default registry.
	Registry *prometheus.Registry
	// HTTPClient replaces the upstream client (tests); nil means a tuned
	// transport per upstream model.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logf receives the server's log lines: upstream failures (status and
	// message, credentials masked) under the request id, keys reloads.
	// Nil discards them.
	Logf func(format string, args ...any)
	// Build names the running binary in crab_build_info.
	Build BuildInfo
}

// Server is the proxy, an http.Handler. Build it with New, serve it, and
// Close it after the HTTP server has shut down.
type Server struct {
	cfg      *Config
	arm      stack.ArmSpec
	keys     atomic.Pointer[Keys]
	keysFile string
	perKey   sync.Map    // keyHash → *atomic.Int64: requests in flight per API key
	secrets  *redact.Set // every configured credential, masked wherever it appears
	log      func(format string, args ...any)
	contract *contract.Contract
	stack    model.Model
	names    []string // models clients may ask for, "auto" included
	models   map[string]bool
	backends stack.BackendSet
	built    *stack.Arm
	m        *metrics
	reg      *prometheus.Registry
	now      func() time.Time
	created  int64
	// dec reads request bodies, remembering the schema they repeat.
	dec openaiwire.RequestDecoder
	// contractSeen is the last client schema found equal to the contract.
	contractSeen atomic.Pointer[[]byte]
	seq          atomic.Uint64
	idPrefix     string // of the request ids crab gives: "crab-<created, hex>-"
	routes       *http.ServeMux
	// recs writes the records (nil without records); runID names them.
	// embedKey and embedClient call the embeddings upstream.
	embedKey     string
	embedClient  *http.Client
	recs         *recordLog
	shadow       *shadow // nil without a shadow
	closeOnce    sync.Once
	runID        string
	contractHash string
}

var _ http.Handler = (*Server)(nil)

// New builds the stack of setup through the stack package, in its one
// layer order — cache → deadline → router or cascade → contract → retry →
// concurrency cap → models — and the server around it.
func New(setup *Setup, o Options) (*Server, error) {
	if o.Registry == nil {
		return nil, errors.New("serve: a metrics registry is required")
	}
	cfg := setup.Config
	s := &Server{cfg: cfg, arm: setup.Arm, keysFile: setup.KeysFile, contract: setup.Contract, reg: o.Registry, now: o.Now,
		models: map[string]bool{}, log: o.Logf}
	s.keys.Store(setup.Keys)
	s.secrets = setup.Secrets
	if s.secrets == nil {
		s.secrets = secretsOf(setup)
	}
	if setup.EmbeddingsKey != "" {
		s.embedKey = setup.EmbeddingsKey
		s.secrets = s.secrets.With(setup.EmbeddingsKey)
	}
	s.embedClient = o.HTTPClient
	if s.embedClient == nil {
		s.embedClient = &http.Client{Timeout: cfg.Timeout.Std()}
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.created = s.now().Unix()
	s.idPrefix = "crab-" + strconv.FormatInt(s.created, 16) + "-"
	var err error
	names := make([]string, 0, len(setup.Models))
	for _, m := range setup.Models {
		names = append(names, m.Name)
	}
	if s.m, err = newMetrics(o.Registry, names, setup.Keys.Tenants(), o.Build); err != nil {
		return nil, err
	}
	keys := map[string]string{} // api_key_env → the key Load read
	for _, m := range setup.Models {
		if m.APIKeyEnv != "" {
			keys[m.APIKeyEnv] = setup.APIKeys[m.Name]
		}
	}
	s.backends, err = stack.Backends(setup.Models, stack.BackendOptions{
		Seed: setup.Seed, TimeScale: setup.TimeScale, MaxConns: cfg.Concurrency, MaxAnswerBytes: cfg.MaxAnswerBytes,
		HTTPClient: o.HTTPClient, Secrets: s.secrets,
		LookupEnv: func(env string) (string, bool) { v, ok := keys[env]; return v, ok },
	})
	if err != nil {
		var fe *stack.FieldError
		if errors.As(err, &fe) {
			return nil, &ConfigError{File: cfg.File, Field: "models", Msg: fe.Msg}
		}
		return nil, err
	}
	upstream := make(map[string]model.Model, len(s.backends))
	for _, m := range setup.Models {
		upstream[m.Name] = s.observeUpstream(m.Name, s.backends[m.Name])
		s.names = append(s.names, m.Name)
		s.models[m.Name] = true
	}
	s.names = append(s.names, AutoModel)
	s.built, err = stack.Build(setup.Arm, upstream, stack.Options{
		Contract: setup.Contract, Retry: cfg.Retry, Timeout: cfg.Timeout.Std(), Concurrency: cfg.Concurrency,
		Store: setup.Store, Upstream: stack.UpstreamID(setup.Models), Now: s.now,
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	s.stack = s.built.Model
	if setup.Contract != nil {
		s.contractHash = setup.Contract.Hash()
	}
	s.runID = "serve-" + strconv.FormatInt(s.created, 16)
	if err := s.openRecords(setup, o); err != nil {
		s.Close()
		return nil, err
	}

	s.routes = http.NewServeMux()
	s.routes.HandleFunc(chatPath, s.chat)
	s.routes.HandleFunc("/v1/models", s.listModels)
	s.routes.HandleFunc("/v1/embeddings", s.embeddings)
	s.routes.Handle("/metrics", promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{Registry: o.Registry}))
	s.routes.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	s.routes.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, r, "", http.StatusNotFound, openaiwire.ErrTypeNotFound, "not_found", "", "no such endpoint: "+r.URL.Path)
	})
	if st := s.built.Store; st != nil {
		s.m.storeMetrics(o.Registry, st, s.built.Cache)
	}
	return s, nil
}

// openRecords opens the records directory and the shadow, when the
// configuration has them.
func (s *Server) openRecords(setup *Setup, o Options) error {
	cfg := setup.Config
	if rc := cfg.Records; rc != nil {
		dir := recordsDir(cfg)
		var err error
		s.recs, err = openRecordLog(*rc, dir, newServeManifest(s.runID, setup, s.now(), o.Build), s.logf)
		if err != nil {
			return &ConfigError{File: cfg.File, Line: rc.line, Field: "records.dir", Msg: fmt.Sprintf("cannot write records to %s: %v", dir, err)}
		}
		o.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "crab_serve", Name: "records_errors_total",
			Help: "Records lost: never written, because the disk refused them beyond what waits in memory (see the manifest's records_lost); the requests themselves were answered."},
			func() float64 { return float64(s.recs.Lost()) }))
	}
	if setup.Candidate != nil && cfg.Shadow != nil {
		return s.newShadow(setup, o.Registry)
	}
	return nil
}

// ReloadKeys reads the keys file again and swaps it in: a request that
// arrives after it returns is judged by the new keys (a rotated key works,
// a removed one gets 401), and no connection is dropped. On error the old
// keys stay in force.
func (s *Server) ReloadKeys() (int, error) {
	if s.keysFile == "" {
		return 0, errors.New("serve: no keys file to reload")
	}
	k, err := ReadKeys(s.keysFile)
	if err != nil {
		return 0, err
	}
	s.m.setTenants(k.Tenants())
	s.keys.Store(k)
	return k.Len(), nil
}

// acquire takes one of the key's in-flight slots and returns the key's
// count; nil when all are taken. Release the slot with Add(-1) when the
// request is answered.
func (s *Server) acquire(h keyHash) *atomic.Int64 {
	v, _ := s.perKey.Load(h)
	if v == nil {
		v, _ = s.perKey.LoadOrStore(h, new(atomic.Int64))
	}
	n := v.(*atomic.Int64)
	if n.Add(1) > int64(s.cfg.MaxInFlightPerKey) {
		n.Add(-1)
		return nil
	}
	return n
}

// chatPath is the path of chat completions, the route nearly every
// request takes.
const chatPath = "/v1/chat/completions"

// ServeHTTP routes a request. A chat completion goes straight to its
// handler, its writers held in its exchange (one allocation, where the
// mux and a writer of its own would cost more); the mux routes the rest,
// and whatever it sends to chat (the same handler) as well: a path that
// only decodes to chatPath (an escaped slash) is the mux's to judge.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == chatPath && r.URL.RawPath == "" {
		x := &exchange{masked: maskedResponse{ResponseWriter: w, secrets: s.secrets}}
		defer s.recoverPanic(&x.masked, r)
		s.serveChat(x, &x.masked, r)
		return
	}
	mw := &maskedResponse{ResponseWriter: w, secrets: s.secrets}
	defer s.recoverPanic(mw, r)
	s.routes.ServeHTTP(mw, r)
}

// Models lists the model names clients may ask for, "auto" last.
func (s *Server) Models() []string { return append([]string(nil), s.names...) }

// Close flushes the records (marking their manifest finished) and
// releases the cache store and idle upstream connections.
func (s *Server) Close() { s.closeOnce.Do(s.close) }

func (s *Server) close() {
	if s.shadow != nil {
		if err := s.shadow.Close(s.now()); err != nil {
			s.logf("shadow records: %v", err)
		}
	}
	if s.recs != nil {
		if err := s.recs.Close(s.now()); err != nil {
			s.logf("records: %v", err)
		}
	}
	if s.built != nil {
		s.built.Close()
	}
	s.backends.Close()
}

// identify returns the caller's identity and key hash from its API key,
// read from the headers alone: an unknown caller is refused before any of
// its body is read.
func (s *Server) identify(w http.ResponseWriter, r *http.Request, reqID string) (Identity, keyHash, bool) {
	if key, ok := bearer(r.Header.Get("Authorization")); ok {
		if id, h, found := s.keys.Load().lookup(key); found {
			if !MarkKeyed(r.Context(), h) {
				s.refuseConn(w, r, reqID)
				return Identity{}, keyHash{}, false
			}
			return id, h, true
		}
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="crab"`)
	s.refuse(w, r, reqID, http.StatusUnauthorized, openaiwire.ErrTypeInvalidRequest, CodeInvalidAPIKey, "",
		"Incorrect or missing API key: send Authorization: Bearer KEY with a key from crab serve's keys file.")
	return Identity{}, keyHash{}, false
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		s.refuse(w, r, "", http.StatusMethodNotAllowed, openaiwire.ErrTypeInvalidRequest, "method_not_allowed", "", "use GET")
		return
	}
	if _, _, ok := s.identify(w, r, ""); !ok {
		return
	}
	openaiwire.WriteModels(w, s.names, s.created)
}

// observeUpstream counts the tokens of every attempt of the upstream
// model name, and every failed attempt by status.
func (s *Server) observeUpstream(name string, next model.Model) model.Model {
	label := s.m.modelLabel(name)
	return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		resp, err := next.Complete(ctx, req)
		if resp != nil {
			in, out := float64(resp.Usage.TokensIn), float64(resp.Usage.TokensOut)
			tenant := s.m.tenantLabel(req.Scope.Tenant)
			ss := s.m.series(label, tenant)
			add(ss.tokensIn, in)
			add(ss.tokensOut, out)
			ss.genaiIn.Observe(in)
			ss.genaiOut.Observe(out)
		}
		if err != nil {
			if label := upstreamErrorLabel(err); label != "" {
				s.m.upstreamErrors.WithLabelValues(label).Inc()
			}
		}
		return resp, err
	})
}

// chat answers POST /v1/chat/completions.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) { s.serveChat(new(exchange), w, r) }

// serveChat answers a chat completion on w, which masks what it sends,
// learning what happens in x.
func (s *Server) serveChat(x *exchange, w http.ResponseWriter, r *http.Request) {
	x.start, x.seq, x.r, x.modelLabel = s.now(), s.seq.Add(1), r, noModel
	x.rec.ResponseWriter = w
	x.w = &x.rec
	s.m.inFlight.Inc()
	defer s.m.inFlight.Dec()
	w = x.w
	defer s.finish(x)
	// A panic is answered (500) before finish counts the request.
	defer s.recoverPanic(w, r)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.refuse(w, r, "", http.StatusMethodNotAllowed, openaiwire.ErrTypeInvalidRequest, "method_not_allowed", "", "use POST")
		return
	}
	reqID := r.Header.Get(openai.HeaderRequestID)
	x.taskID = numbered(s.idPrefix, x.seq)
	if reqID == "" {
		reqID = x.taskID
	} else if !validRequestID(reqID) {
		s.refuse(w, r, "", http.StatusBadRequest, openaiwire.ErrTypeInvalidRequest, "invalid_request_id", openai.HeaderRequestID,
			"request id: want 1 to 128 letters, digits and . _ : -")
		return
	} else {
		x.taskID += "/" + reqID // unique in the records, whatever ids clients repeat
	}
	w.Header().Set(openai.HeaderRequestID, reqID)
	if r.ContentLength > s.cfg.MaxBodyBytes {
		// Refused from the header, before any of the body is read.
		s.refuse(w, r, reqID, http.StatusRequestEntityTooLarge, openaiwire.ErrTypeInvalidRequest, CodeRequestTooLarge, "",
			fmt.Sprintf("the request body (Content-Length %d) is over the limit of %d bytes", r.ContentLength, s.cfg.MaxBodyBytes))
		return
	}
	id, kh, ok := s.identify(w, r, reqID)
	if !ok {
		return
	}
	inFlight := s.acquire(kh)
	if inFlight == nil {
		s.refuse(w, r, reqID, http.StatusTooManyRequests, openaiwire.ErrTypeRateLimit, CodeTooManyRequests, "",
			fmt.Sprintf("this API key has %d requests in flight, the most allowed; retry when one is answered", s.cfg.MaxInFlightPerKey))
		return
	}
	defer inFlight.Add(-1)
	c, status, code, param, err := s.decode(r, id, reqID)
	if err != nil {
		typ := openaiwire.ErrTypeInvalidRequest
		if status == http.StatusNotFound {
			typ = openaiwire.ErrTypeNotFound
		}
		s.refuse(w, r, reqID, status, typ, code, param, err.Error())
		return
	}

	if len(c.dropped) > 0 {
		dropped := strings.Join(c.dropped, ",")
		w.Header().Set(HeaderDroppedParams, dropped)
		s.logf("request %s: dropped parameters (drop_params): %s", reqID, dropped)
	}
	ctx, info := stack.WithInfo(r.Context())
	x.req, x.info = c.req, info
	x.resp, x.err = s.stack.Complete(ctx, c.req)
	resp := x.resp
	x.cacheLabel = s.observe(resp, info)
	if resp != nil {
		x.modelLabel = s.m.modelLabel(resp.Model)
		s.m.charge(x.modelLabel, s.m.tenantLabel(id.Tenant), resp.Usage)
	}
	s.setHeaders(w.Header(), resp, x.err)
	if x.err != nil {
		s.fail(w, r, reqID, resp, x.err, info.TimedOut)
		return
	}
	x.firstByte = s.reply(w, c, resp)
}

// observe records the stack's decisions in the metrics and returns the
// cache label.
func (s *Server) observe(resp *model.Response, info *stack.Info) string {
	label := "bypass"
	if resp == nil {
		s.m.cacheBypasses.Inc()
		return label
	}
	tr := &resp.Trace
	switch tr.Cache {
	case model.CacheHit:
		label = "hit"
		s.m.cacheHits.Inc()
		if tr.Leak != "" {
			s.m.leaks.WithLabelValues(bounded(tr.Leak, leakKinds)).Inc()
		}
	case model.CacheMiss:
		label = "miss"
		s.m.cacheMisses.Inc()
	default:
		s.m.cacheBypasses.Inc()
	}
	if tr.ScopeMismatch {
		s.m.scopeMismatch.Inc()
	}
	if tr.Routed {
		s.m.routes.WithLabelValues(bounded(tr.RouteModel, s.m.modelNames)).Inc()
		if tr.RouteFallback {
			s.m.routeFallbacks.Inc()
		}
	}
	if tr.Attempts > 0 {
		s.m.queue.Observe(info.Queue.Seconds())
		s.m.modelTime.Observe(tr.ModelDur.Seconds())
		if !tr.FirstByteAt.IsZero() {
			s.m.upstreamTTFT.Observe(tr.TTFT.Seconds())
		}
	}
	if tr.Validated && !tr.ContractOK {
		seen := map[string]bool{}
		for _, v := range tr.Violations {
			kind := violationRule(v)
			if !seen[kind] {
				seen[kind] = true
				s.m.contractFails.WithLabelValues(kind).Inc()
			}
		}
		if len(tr.Violations) == 0 {
			s.m.contractFails.WithLabelValues("unknown").Inc()
		}
	}
	return label
}
