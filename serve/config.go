package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/internal/inputerr"
	"github.com/crab-testbed/crab/internal/redact"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/openai"
	"github.com/crab-testbed/crab/router"
	"github.com/crab-testbed/crab/stack"
)

// Config is the configuration file of crab serve (YAML). Paths are
// relative to the file. Example:
//
//	listen: 127.0.0.1:8080
//	keys: keys.yaml
//	max_body_bytes: 1048576
//	timeout: 60s
//	concurrency: 64
//	retry: {max_attempts: 2, backoff: 200ms}
//	models:
//	  - name: small
//	    base_url: http://127.0.0.1:8000/v1
//	    model: Qwen/Qwen2.5-1.5B-Instruct
//	    price_in_per_mtok: 0.15
//	    price_out_per_mtok: 0.60
//	  - name: large
//	    base_url: https://api.openai.com/v1
//	    model: gpt-4o
//	    api_key_env: OPENAI_API_KEY
//	    crab_headers: false
//	default_model: large
//	contract: {file: triage.schema.json, policy: escalate, escalate_to: large}
//	cache: {key: full, ttl: 10m, store: ristretto}   # store redis shares it between replicas; or {kind: semantic, threshold: 0.9}
//	router: {threshold: 0.5, small: small, large: large}   # or {mode: cascade, small: small, large: large, confidence: 0.8}
//
// The configuration is a thin layer over the stack package: its models,
// default model, mode, cache, router and contract policy are one arm,
// checked by the same validator and built by the same builder as the arms
// crab run measures.
type Config struct {
	// Listen is the address to listen on when --listen is not given.
	Listen string `yaml:"listen"`
	// Keys is the API key file (see Keys); required.
	Keys string `yaml:"keys"`
	// MaxBodyBytes bounds a request body; larger bodies get 413. Default 1 MiB.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxAnswerBytes bounds one upstream answer as it arrives (a body,
	// or what crab keeps of a stream: see openai.Config.MaxAnswerBytes)
	// and one embeddings answer; an answer that grows past it is the
	// upstream's fault (502 upstream_error), so an upstream that never
	// stops answering cannot exhaust serve's memory. Default 4 MiB.
	MaxAnswerBytes int64 `yaml:"max_answer_bytes"`
	// Timeout is the deadline of one request through the whole stack,
	// retries and re-asks included. Default 60s.
	Timeout stack.Duration `yaml:"timeout"`
	// Concurrency is how many upstream calls may be in flight; more wait
	// in a queue (queue time). Default 64.
	Concurrency int `yaml:"concurrency"`
	// Retry is the policy for upstream calls that fail: max_attempts
	// (total attempts, first included; default 1, no retry) and backoff
	// (the wait before the second attempt, doubled after).
	Retry stack.RetrySpec `yaml:"retry"`
	// MaxInFlightPerKey caps the requests one API key may have in flight
	// (from its headers to the end of its answer); more get 429 at once,
	// so one tenant cannot take every upstream slot. Default 32.
	MaxInFlightPerKey int `yaml:"max_in_flight_per_key"`
	// MaxConns caps the connections open at once; more wait in the listen
	// backlog. Default 1024.
	MaxConns int `yaml:"max_conns"`
	// MaxConnsPerKey caps the connections one API key may hold open; a
	// request with a key at its cap gets 429 too_many_connections and its
	// connection is closed, so one tenant cannot hold every slot with idle
	// keep-alives. Default the larger of max_conns/16 and twice
	// max_in_flight_per_key (64 with the defaults), at most max_conns.
	MaxConnsPerKey int `yaml:"max_conns_per_key"`
	// KeylessTimeout bounds, on a connection that has not yet presented
	// a valid API key, the wait for a request's headers and the idle time
	// between requests. Default 5s.
	KeylessTimeout stack.Duration `yaml:"keyless_timeout"`
	// MaxKeylessConns is the share of max_conns that connections without
	// a valid key may hold; one more closes the oldest of them (from the
	// address holding the most), never a keyed one. Default max_conns/8.
	MaxKeylessConns int `yaml:"max_keyless_conns"`
	// MaxKeylessConnsPerSource caps the keyless connections from one
	// remote address; one more closes that address's oldest. Default
	// max_keyless_conns/4.
	MaxKeylessConnsPerSource int `yaml:"max_keyless_conns_per_source"`
	// ReadHeaderTimeout bounds reading a request's headers. Default 10s.
	ReadHeaderTimeout stack.Duration `yaml:"read_header_timeout"`
	// BodyTimeout bounds reading a request's body after its headers;
	// slower clients get 408 and are disconnected. Default 15s.
	BodyTimeout stack.Duration `yaml:"body_timeout"`
	// IdleTimeout closes keep-alive connections idle this long. Default 120s.
	IdleTimeout stack.Duration `yaml:"idle_timeout"`
	// WriteTimeout bounds a response, headers read to last byte sent.
	// Default: timeout + 30s, so an answer the stack produced in time is
	// never cut while being sent.
	WriteTimeout stack.Duration `yaml:"write_timeout"`
	// Models are the upstream OpenAI-compatible backends: the stack's
	// model spec, so every field a model of crab run may set (name,
	// base_url, model, api_key_env, stream, crab_headers, the prices)
	// means the same here. The backend is openai (the default here);
	// an experiment's simulated or replayed models are served by deploying
	// its arm instead.
	Models []stack.ModelSpec `yaml:"models"`
	// DefaultModel answers requests for model "auto" when there is no
	// router. Default: the first model.
	DefaultModel string `yaml:"default_model"`
	// Mode is the output mode asked of the upstream when the client sends
	// no X-Crab-Mode: full (default), short or over_short.
	Mode string `yaml:"mode"`
	// Instructions replace, per output mode (short, over_short), the
	// instruction appended to the system prompt, as an arm's instructions
	// do in crab run.
	Instructions map[string]string `yaml:"instructions"`
	// DefaultLang and DefaultDocVersion are the scope's language and
	// document version when neither the client nor its key give one.
	DefaultLang       string `yaml:"default_lang"`
	DefaultDocVersion string `yaml:"default_doc_version"`
	// Contract, when set, is checked on every answer.
	Contract *ContractConfig `yaml:"contract"`
	// Cache, when set, puts a scoped response cache in front of the
	// stack: the stack's cache spec, so every field an arm of crab run may
	// set (key, ttl, check_on_hit, store, redis_addr, max_cost,
	// wait_for_store, and kind semantic with threshold and embedder) means
	// the same here. In serve, wait_for_store defaults to false: the store
	// applies an entry off the response path, so an identical request
	// arriving within microseconds of the first answer may miss once more.
	Cache *stack.CacheSpec `yaml:"cache"`
	// Router, when set, routes requests for model "auto" by difficulty:
	// the stack's router spec (mode threshold or cascade, threshold,
	// small, large, confidence, scorer). A scorer .json file is named
	// relative to this file.
	Router *stack.RouterSpec `yaml:"router"`
	// Embeddings, when set, passes POST /v1/embeddings through to an
	// upstream (see EmbeddingsConfig).
	Embeddings *EmbeddingsConfig `yaml:"embeddings"`
	// DropParams, like LiteLLM's drop_params: true drops every request
	// parameter crab would refuse (tools, unknown fields, ...), a list
	// drops the named ones; each drop is named in the
	// X-Crab-Dropped-Params header and the log. Default: refuse them with
	// 400 unsupported_parameter.
	DropParams DropParams `yaml:"drop_params"`
	// Records, when set, writes a record of every request through the
	// stack (see RecordsConfig).
	Records *RecordsConfig `yaml:"records"`
	// Arms are candidate arms over the same models — each a stack arm:
	// name, model, mode, cache, router, contract policy — for Shadow to
	// try on live traffic.
	Arms []stack.ArmSpec `yaml:"arms"`
	// Shadow, when set, mirrors a sampled share of requests to one of
	// Arms (see ShadowConfig).
	Shadow *ShadowConfig `yaml:"shadow"`

	File string `yaml:"-"` // path the configuration was read from
}

// ContractConfig is the output contract and what happens to an answer
// that breaks it: the contract file, and the stack's contract policy
// (policy, escalate_to) as an arm of crab run sets it.
type ContractConfig struct {
	File               string `yaml:"file"` // JSON Schema, sent upstream as response_format and checked locally
	stack.ContractSpec `yaml:",inline"`
}

// ConfigError is a problem in a configuration or keys file, naming the
// file, the line and the field.
type ConfigError struct {
	File  string
	Line  int // 0 when not tied to a line
	Field string
	Msg   string
}

// ErrBadConfig matches every *ConfigError with errors.Is.
var ErrBadConfig = errors.New("serve: bad configuration")

func (e *ConfigError) Error() string {
	return inputerr.Format(e.File, e.Line, e.Field, e.Msg)
}

// Is reports ErrBadConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrBadConfig }

// Setup is a configuration with everything it names loaded and checked.
type Setup struct {
	Config *Config
	Keys   *Keys
	// KeysFile is the path Keys were read from, read again by
	// Server.ReloadKeys (on SIGHUP).
	KeysFile string
	Contract *contract.Contract // nil without a contract
	APIKeys  map[string]string  // upstream API keys by model name, read from api_key_env
	// EmbeddingsKey is the embeddings upstream's API key, read from its
	// api_key_env.
	EmbeddingsKey string

	// Models and Arm are the stack the server builds: the configuration's
	// upstream models and cache, router and contract, or an arm of an
	// experiment deployed as it was measured.
	Models []stack.ModelSpec
	Arm    stack.ArmSpec
	// Candidate is the arm a shadow mirrors requests to (nil without a
	// shadow): one of the configuration's arms, or another arm of the
	// experiment.
	Candidate *stack.ArmSpec
	// Seed and TimeScale drive simulated models (experiment deployments).
	Seed      int64
	TimeScale float64
	// Store is the base of the cache store's configuration; a shared
	// store's keys live under its prefix, so every replica of the proxy
	// shares one cache.
	Store cache.StoreConfig
	// Secrets is every credential the setup holds (upstream API keys, the
	// store's password and tag secret, URL passwords): masked in every
	// log line and answer the server writes.
	Secrets *redact.Set
}

// ServeStorePrefix starts the key prefix of a shared cache store in crab
// serve; the default prefix follows it with a digest of the deployment
// (DeploymentPrefix), unless the cache names its own redis_prefix.
const ServeStorePrefix = "crab:serve:"

// DeploymentPrefix is the default store prefix of a deployment identified
// by parts (e.g. the configuration file's bytes): ServeStorePrefix and a
// short digest, so two deployments on one Redis never share keys.
func DeploymentPrefix(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return ServeStorePrefix + hex.EncodeToString(h.Sum(nil))[:12] + ":"
}

// secretsOf is every credential of a setup, for masking.
func secretsOf(s *Setup) *redact.Set {
	arms := []stack.ArmSpec{s.Arm}
	if s.Candidate != nil {
		arms = append(arms, *s.Candidate)
	}
	set := stack.Secrets(s.Models, arms, nil)
	for _, k := range s.APIKeys {
		set = set.With(k)
	}
	if s.EmbeddingsKey != "" {
		set = set.With(s.EmbeddingsKey)
	}
	return set
}

// Load reads the configuration file at path and the keys and contract
// files it names, and checks all of it. Every error is a *ConfigError.
func Load(path string) (*Setup, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: readErr(err)}
	}
	cfg, root, err := ParseConfig(raw, path)
	if err != nil {
		return nil, err
	}
	s := &Setup{Config: cfg, APIKeys: map[string]string{}, TimeScale: 1, Store: cache.StoreConfig{Prefix: DeploymentPrefix(string(raw))}}
	s.Models, s.Arm = cfg.Models, cfg.arm()
	base := filepath.Dir(path)
	if sh := cfg.Shadow; sh != nil {
		cand, _ := cfg.candidate(sh.Arm)
		s.Candidate = &cand
		if errs := stack.ResolveAccess([]stack.ArmSpec{cand}, base, nil); len(errs) > 0 {
			at := append([]string{"arms", strconv.Itoa(slices.IndexFunc(cfg.Arms, func(a stack.ArmSpec) bool { return a.Name == cand.Name }))}, configPath(errs[0].Path[2:])...)
			return nil, &ConfigError{File: path, Line: lineOf(root, at...), Field: strings.Join(dropIndexes(at), "."), Msg: errs[0].Msg}
		}
	}
	// The store's password, tag secret and TLS files: read before anything
	// is served, a missing one named with its line.
	if errs := stack.ResolveAccess([]stack.ArmSpec{s.Arm}, base, nil); len(errs) > 0 {
		at := configPath(errs[0].Path)
		return nil, &ConfigError{File: path, Line: lineOf(root, at...), Field: strings.Join(dropIndexes(at), "."), Msg: errs[0].Msg}
	}
	rel := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	kp := rel(cfg.Keys)
	kraw, err := os.ReadFile(kp)
	if err != nil {
		return nil, &ConfigError{File: path, Line: lineOf(root, "keys"), Field: "keys", Msg: readErr(err)}
	}
	if s.Keys, err = ParseKeys(kraw, kp); err != nil {
		return nil, err
	}
	s.KeysFile = kp
	if c := cfg.Contract; c != nil {
		cp := rel(c.File)
		craw, err := os.ReadFile(cp)
		if err != nil {
			return nil, &ConfigError{File: path, Line: lineOf(root, "contract", "file"), Field: "contract.file", Msg: readErr(err)}
		}
		if s.Contract, err = contract.Load(cp, craw); err != nil {
			var le *contract.LoadError
			if errors.As(err, &le) {
				return nil, &ConfigError{File: le.File, Line: le.Line, Field: le.Pointer, Msg: le.Msg}
			}
			return nil, &ConfigError{File: cp, Msg: err.Error()}
		}
	}
	if e := cfg.Embeddings; e != nil && e.APIKeyEnv != "" {
		v, ok := os.LookupEnv(e.APIKeyEnv)
		if !ok || strings.TrimSpace(v) == "" {
			return nil, &ConfigError{File: path, Line: lineOf(root, "embeddings", "api_key_env"), Field: "embeddings.api_key_env",
				Msg: fmt.Sprintf("environment variable %s is not set", e.APIKeyEnv)}
		}
		s.EmbeddingsKey = v
	}
	for i, m := range cfg.Models {
		if m.APIKeyEnv == "" {
			continue
		}
		v, ok := os.LookupEnv(m.APIKeyEnv)
		if !ok || strings.TrimSpace(v) == "" {
			return nil, &ConfigError{File: path, Line: lineOf(root, "models", strconv.Itoa(i), "api_key_env"), Field: "models.api_key_env",
				Msg: fmt.Sprintf("model %s: environment variable %s is not set", m.Name, m.APIKeyEnv)}
		}
		s.APIKeys[m.Name] = v
	}
	s.Secrets = secretsOf(s)
	return s, nil
}

func readErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("cannot read %s: %v", pe.Path, pe.Err)
	}
	return err.Error()
}

// ParseConfig decodes and validates a configuration file and fills its
// defaults. name is used in errors; every error is a *ConfigError. It also
// returns the YAML tree, to point at lines later.
func ParseConfig(raw []byte, name string) (*Config, *yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return nil, nil, yamlErr(name, err)
	}
	if len(root.Content) == 0 {
		return nil, nil, &ConfigError{File: name, Msg: "empty configuration file"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, yamlErr(name, err)
	}
	c.File = name
	if err := c.validate(root.Content[0]); err != nil {
		return nil, nil, err
	}
	return &c, root.Content[0], nil
}

func (c *Config) validate(root *yaml.Node) error {
	bad := func(field string, path []string, format string, args ...any) error {
		return &ConfigError{File: c.File, Line: lineOf(root, path...), Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if c.Keys == "" {
		return bad("keys", nil, "required: the API key file")
	}
	if c.MaxBodyBytes < 0 {
		return bad("max_body_bytes", []string{"max_body_bytes"}, "must not be negative")
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.MaxAnswerBytes < 0 {
		return bad("max_answer_bytes", []string{"max_answer_bytes"}, "must not be negative")
	}
	if c.MaxAnswerBytes == 0 {
		c.MaxAnswerBytes = openai.DefaultMaxAnswerBytes
	}
	for _, d := range []struct {
		name string
		v    stack.Duration
	}{{"timeout", c.Timeout}, {"read_header_timeout", c.ReadHeaderTimeout}, {"body_timeout", c.BodyTimeout},
		{"idle_timeout", c.IdleTimeout}, {"write_timeout", c.WriteTimeout}, {"keyless_timeout", c.KeylessTimeout}} {
		if msg := stack.ValidTimeout(d.v.Std()); msg != "" {
			return bad(d.name, []string{d.name}, "%s", msg)
		}
	}
	if c.Timeout == 0 {
		c.Timeout = stack.Duration(60 * time.Second)
	}
	if c.MaxInFlightPerKey < 0 {
		return bad("max_in_flight_per_key", []string{"max_in_flight_per_key"}, "must be at least 1")
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"max_conns", c.MaxConns}, {"max_conns_per_key", c.MaxConnsPerKey}, {"max_keyless_conns", c.MaxKeylessConns}, {"max_keyless_conns_per_source", c.MaxKeylessConnsPerSource}} {
		if n.v < 0 {
			return bad(n.name, []string{n.name}, "must be at least 1")
		}
	}
	c.fillLimits()
	if c.Concurrency < 0 {
		return bad("concurrency", []string{"concurrency"}, "must be at least 1")
	}
	if c.Concurrency == 0 {
		c.Concurrency = 64
	}
	if errs := stack.ValidateRetry(&c.Retry, "retry"); len(errs) > 0 {
		return bad(errs[0].Field, configPath(errs[0].Path), "%s", errs[0].Msg)
	}
	if len(c.Models) == 0 {
		return bad("models", nil, "at least one upstream model is required")
	}
	names := map[string]bool{}
	for i := range c.Models {
		m := &c.Models[i]
		if m.Name == AutoModel {
			return bad("models.name", []string{"models", strconv.Itoa(i), "name"}, "%q is reserved for routed requests", AutoModel)
		}
		switch m.Backend {
		case "":
			m.Backend = stack.BackendOpenAI
		case stack.BackendOpenAI:
		default:
			return bad("models.backend", []string{"models", strconv.Itoa(i), "backend"},
				"serve's models are OpenAI-compatible upstreams (backend openai); to serve a %s model, deploy an experiment's arm (crab serve --experiment FILE --arm NAME)", m.Backend)
		}
		names[m.Name] = true
	}
	if c.DefaultModel == "" {
		c.DefaultModel = c.Models[0].Name
	} else if !names[c.DefaultModel] {
		return bad("default_model", []string{"default_model"}, "unknown model %q", c.DefaultModel)
	}
	if c.Mode == "" {
		c.Mode = model.ModeFull
	}
	if e := c.Embeddings; e != nil {
		if f, msg := e.validate(); msg != "" {
			return bad("embeddings."+f, []string{"embeddings", f}, "%s", msg)
		}
	}
	if msg := c.DropParams.check(); msg != "" {
		return bad("drop_params", []string{"drop_params"}, "%s", msg)
	}
	if r := c.Records; r != nil {
		if field, at, msg := r.check(); msg != "" {
			return bad("records."+field, append([]string{"records"}, at...), "%s", msg)
		}
		r.fill()
		r.line = lineOf(root, "records", "dir")
	}
	if k := c.Contract; k != nil && k.File == "" {
		return bad("contract.file", []string{"contract"}, "required")
	}
	if at, ok := c.thresholdFrom(); ok {
		return bad(strings.Join(dropIndexes(at), "."), at, "read by crab run and crab tune only; give the tune.json's threshold (mode cascade: confidence) here")
	}
	c.resolveRouters()
	arm := c.arm()
	if errs := stack.Validate(c.Models, []stack.ArmSpec{arm}); len(errs) > 0 {
		path := configPath(errs[0].Path)
		return bad(strings.Join(dropIndexes(path), "."), path, "%s", errs[0].Msg)
	}
	if err := c.validateArms(root, c.Models, arm); err != nil {
		return err
	}
	if c.DefaultLang != "" && !validLang(c.DefaultLang) {
		return bad("default_lang", []string{"default_lang"}, "want a language tag such as en or pt-BR, got %q", c.DefaultLang)
	}
	if c.DefaultDocVersion != "" && !validDocVersion(c.DefaultDocVersion) {
		return bad("default_doc_version", []string{"default_doc_version"}, "want letters, digits and . _ : - (at most 64), got %q", c.DefaultDocVersion)
	}
	return nil
}

// fillLimits fills the defaults of the connection limits.
func (c *Config) fillLimits() {
	d := DefaultLimits()
	if c.MaxInFlightPerKey == 0 {
		c.MaxInFlightPerKey = 32
	}
	if c.MaxConns == 0 {
		c.MaxConns = d.MaxConns
	}
	if c.MaxConnsPerKey == 0 {
		c.MaxConnsPerKey = min(max(c.MaxConns/16, 2*c.MaxInFlightPerKey), c.MaxConns)
	}
	if c.ReadHeaderTimeout == 0 {
		c.ReadHeaderTimeout = stack.Duration(d.ReadHeaderTimeout)
	}
	if c.BodyTimeout == 0 {
		c.BodyTimeout = stack.Duration(d.BodyTimeout)
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = stack.Duration(d.IdleTimeout)
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = c.Timeout + stack.Duration(30*time.Second)
	}
}

// Limits are the connection limits of the configuration.
func (c *Config) Limits() Limits {
	return Limits{
		ReadHeaderTimeout: c.ReadHeaderTimeout.Std(), BodyTimeout: c.BodyTimeout.Std(), IdleTimeout: c.IdleTimeout.Std(),
		WriteTimeout: c.WriteTimeout.Std(), MaxConns: c.MaxConns, MaxConnsPerKey: c.MaxConnsPerKey, Keyed: true, KeylessTimeout: c.KeylessTimeout.Std(),
		MaxKeylessConns: c.MaxKeylessConns, MaxKeylessConnsPerSource: c.MaxKeylessConnsPerSource,
	}
}

// arm is the one arm the configuration deploys, named "serve": its
// default model and mode, and its cache, router and contract policy, the
// very specs the configuration holds (the validator fills their defaults
// in place).
func (c *Config) arm() stack.ArmSpec {
	arm := stack.ArmSpec{Name: "serve", Model: c.DefaultModel, Mode: c.Mode, Instructions: c.Instructions, Cache: c.Cache, Router: c.Router}
	if k := c.Contract; k != nil {
		arm.Contract = &k.ContractSpec
	}
	return arm
}

// resolveRouters names every scorer .json file of the configuration's
// routers (the deployed arm's and the candidates') relative to the
// configuration file, as the stack builds them, once.
func (c *Config) resolveRouters() {
	routers := []*stack.RouterSpec{c.Router}
	for _, a := range c.Arms {
		routers = append(routers, a.Router)
	}
	for _, r := range routers {
		if r != nil && router.IsScorerFile(r.Scorer) && !filepath.IsAbs(r.Scorer) && c.File != "" {
			r.Scorer = filepath.Join(filepath.Dir(c.File), r.Scorer)
		}
	}
}

// thresholdFrom is the path of the first router that names a tune.json
// in threshold_from: crab run and crab tune read it, serve does not, and
// a setting silently ignored would route by another threshold than the
// one the file says.
func (c *Config) thresholdFrom() ([]string, bool) {
	if r := c.Router; r != nil && r.ThresholdFrom != "" {
		return []string{"router", "threshold_from"}, true
	}
	for i, a := range c.Arms {
		if r := a.Router; r != nil && r.ThresholdFrom != "" {
			return []string{"arms", strconv.Itoa(i), "router", "threshold_from"}, true
		}
	}
	return nil, false
}
