package stack

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/crab-testbed/crab/internal/redact"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/openai"
	"github.com/crab-testbed/crab/model/replay"
	"github.com/crab-testbed/crab/model/sim"
)

// BackendOptions are what the backends of a set of model specs share.
type BackendOptions struct {
	// Seed is mixed into every simulated model's random draws, so every
	// arm sees the same model behaviour for the same request.
	Seed int64
	// TimeScale stretches simulated latency: 1 real time, 0 no sleeping.
	TimeScale float64
	// Nominal makes simulated models sleep nothing and report their
	// nominal durations (outcome tables).
	Nominal bool
	// MaxConns sizes the keep-alive pool of every openai backend.
	MaxConns int
	// MaxAnswerBytes bounds one answer of every openai backend (see
	// openai.Config.MaxAnswerBytes); 0 means the backend's default.
	MaxAnswerBytes int64
	// HTTPClient replaces the openai backends' client (tests); nil means
	// a tuned transport per backend.
	HTTPClient *http.Client
	// LookupEnv reads api_key_env; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Secrets is every credential of the process, masked in the openai
	// backends' error texts and refused in their answers; the API keys
	// read from api_key_env are added to it.
	Secrets *redact.Set
	// Oracle gives the simulated models the expected values of each task
	// (their ground truth, see sim.Oracle); nil means none.
	Oracle sim.Oracle
	// Cassettes are the open recordings of the replay backends, by model
	// name; a replay model without one opens its Recording path itself.
	Cassettes map[string]*replay.Cassette
	// Recorder, when set, records every call of every backend.
	Recorder *replay.Recorder
	// CallLog, when set, records every call of every simulated model:
	// arrival, caller (the arm), tokens and queue wait (see sim.CallLog).
	CallLog *sim.CallLog
}

// BackendSet is the models of a set of specs by name, the map a stack's
// model mux dispatches on.
type BackendSet map[string]model.Model

// Close releases the idle connections of the openai backends.
func (b BackendSet) Close() {
	for _, m := range b {
		if c, ok := m.(interface{ Close() }); ok {
			c.Close()
		}
	}
}

// Backends makes one model per spec: a simulated model runs in process, an
// openai one is called over HTTP with its prices and the API key read
// from api_key_env. Specs must have passed Validate. An error is a
// *FieldError naming the model.
func Backends(models []ModelSpec, o BackendOptions) (BackendSet, error) {
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	for _, ms := range models {
		if ms.Backend == BackendOpenAI && ms.APIKeyEnv != "" {
			if k, ok := lookup(ms.APIKeyEnv); ok {
				o.Secrets = o.Secrets.With(k)
			}
		}
	}
	out := make(BackendSet, len(models))
	for i, ms := range models {
		m, err := backend(ms, i, o, lookup)
		if err != nil {
			out.Close()
			return nil, err
		}
		if o.Recorder != nil {
			m = o.Recorder.Wrap(ms.Name, m)
		}
		out[ms.Name] = m
	}
	return out, nil
}

func backend(ms ModelSpec, i int, o BackendOptions, lookup func(string) (string, bool)) (model.Model, error) {
	bad := func(err error) error {
		return &FieldError{Path: []any{"models", i}, Field: "models", Msg: fmt.Sprintf("model %s: %v", ms.Name, err)}
	}
	if ms.Backend == BackendReplay {
		return replayBackend(ms, o, bad)
	}
	if ms.Backend == BackendOpenAI {
		key := ""
		if ms.APIKeyEnv != "" {
			var ok bool
			if key, ok = lookup(ms.APIKeyEnv); !ok || strings.TrimSpace(key) == "" {
				return nil, &FieldError{Path: []any{"models", i, "api_key_env"}, Field: "models.api_key_env",
					Msg: fmt.Sprintf("model %s: environment variable %s is not set", ms.Name, ms.APIKeyEnv)}
			}
		}
		name := ms.Model
		if name == "" {
			name = ms.Name
		}
		in, out := ms.Prices()
		b, err := openai.New(openai.Config{
			Name: ms.Name, BaseURL: ms.BaseURL, Model: name, APIKey: key,
			NoStream: ms.Stream != nil && !*ms.Stream, NoCrabHeaders: ms.CrabHeaders != nil && !*ms.CrabHeaders,
			PriceIn: in, PriceOut: out, MaxConns: o.MaxConns, HTTPClient: o.HTTPClient,
			Secrets: o.Secrets, MaxAnswerBytes: o.MaxAnswerBytes,
		})
		if err != nil {
			return nil, bad(err)
		}
		if !ms.Priced() {
			return &unpriced{b}, nil
		}
		return b, nil
	}
	cfg := sim.Small()
	if ms.Kind == sim.KindLarge {
		cfg = sim.Large()
	}
	cfg.Name = ms.Name
	cfg.PriceIn, cfg.PriceOut = ms.Prices()
	cfg.TimeScale = o.TimeScale
	cfg.NoSleep = o.Nominal
	cfg.Seed = o.Seed
	cfg.Oracle = o.Oracle
	if ms.Errors != nil {
		cfg.Errors = *ms.Errors
	}
	// One sim.Model per spec, shared by every arm of the set: its
	// capacity is one pool, as one deployment would be.
	cfg.Vary = sim.DefaultVary()
	if ms.Vary != nil {
		cfg.Vary = *ms.Vary
	}
	if ms.Capacity != nil {
		cfg.Capacity = *ms.Capacity
	}
	cfg.CallLog = o.CallLog
	f := ms.Faults
	cfg.ErrorRate, cfg.HangRate, cfg.MalformedRate, cfg.MissingFieldRate = f.Error, f.Hang, f.Malformed, f.MissingField
	cfg.WrongEnumRate, cfg.EmptyEvidenceRate, cfg.RefusalRate = f.WrongEnum, f.EmptyEvidence, f.Refusal
	m, err := sim.New(cfg)
	if err != nil {
		return nil, bad(err)
	}
	return m, nil
}

// replayBackend answers from the model's recording: the cassette the
// caller opened, or its Recording path (closed with the backend set).
func replayBackend(ms ModelSpec, o BackendOptions, bad func(error) error) (model.Model, error) {
	c := o.Cassettes[ms.Name]
	owned := c == nil
	if owned {
		var err error
		if c, err = replay.Open(ms.Recording); err != nil {
			return nil, bad(err)
		}
	}
	in, out := ms.Prices()
	b, err := replay.New(replay.Config{
		Name: ms.Name, Recorded: ms.Model, Cassette: c, PriceIn: in, PriceOut: out,
		Latency: ms.Latency, TimeScale: o.TimeScale, NoSleep: o.Nominal,
	})
	if err != nil {
		if owned {
			c.Close()
		}
		return nil, bad(err)
	}
	if owned {
		return &ownedReplay{b, c}, nil
	}
	return b, nil
}

// ownedReplay is a replay backend that closes its recording with it.
type ownedReplay struct {
	*replay.Backend
	c *replay.Cassette
}

func (r *ownedReplay) Close() { r.c.Close() }

// unpriced is a server whose price the experiment does not declare: every
// response it gives says so (model.Usage.Unpriced), so that the records of
// its calls mark their cost unmeasured instead of showing a cost of 0
// nobody measured.
type unpriced struct{ *openai.Backend }

func (u *unpriced) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	resp, err := u.Backend.Complete(ctx, req)
	if resp != nil {
		resp.Usage.Unpriced = true
	}
	return resp, err
}
