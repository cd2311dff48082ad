package router

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/crab-testbed/crab/internal/redact"
	"io"
	"math"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/crab-testbed/crab/model"
)

// HTTPScorerConfig configures an HTTP scorer.
type HTTPScorerConfig struct {
	// URL receives a POST per request (see HTTPScorer).
	URL string
	// Timeout bounds one call; 0 means 250ms.
	Timeout time.Duration
	// Fallback is the score of a request whose call fails (an error, a
	// timeout, a status other than 2xx, a body without a score in [0,1]);
	// nil means 1, i.e. the large model: when the scorer cannot tell, the
	// request goes where it is surely answered well.
	Fallback *float64
	// Client makes the calls; nil means a client of its own.
	Client *http.Client
}

// HTTPScorer makes an external router pluggable: for every request it
// POSTs the request as JSON —
//
//	{"id": ..., "text": ..., "system": ..., "user": ...,
//	 "scope": {"tenant": ..., "permission": ..., "lang": ..., "doc_version": ...}}
//
// — and reads {"score": x}, x in [0,1], from the answer. A failed call
// scores Fallback and is counted (Stats); it never fails the request.
type HTTPScorer struct {
	cfg      HTTPScorerConfig
	fallback float64
	client   *http.Client
	calls    atomic.Int64
	failures atomic.Int64
}

var _ Scorer = (*HTTPScorer)(nil)

// NewHTTPScorer checks cfg and returns the scorer.
func NewHTTPScorer(cfg HTTPScorerConfig) (*HTTPScorer, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("router: scorer URL %q: want http://HOST/PATH or https://HOST/PATH", redact.URL(cfg.URL))
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("router: scorer timeout %v is negative", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 250 * time.Millisecond
	}
	s := &HTTPScorer{cfg: cfg, fallback: 1, client: cfg.Client}
	if cfg.Fallback != nil {
		if f := *cfg.Fallback; math.IsNaN(f) || f < 0 || f > 1 {
			return nil, fmt.Errorf("router: scorer fallback %v is outside [0,1]", f)
		}
		s.fallback = *cfg.Fallback
	}
	if s.client == nil {
		s.client = &http.Client{}
	}
	return s, nil
}

// HTTPScorerStats counts an HTTP scorer's calls and the failed ones that
// scored the fallback.
type HTTPScorerStats struct {
	Calls     int64 `json:"calls"`
	Fallbacks int64 `json:"fallbacks"`
}

// Stats returns the counts so far.
func (s *HTTPScorer) Stats() HTTPScorerStats {
	return HTTPScorerStats{Calls: s.calls.Load(), Fallbacks: s.failures.Load()}
}

type httpScoreRequest struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	System string `json:"system,omitempty"`
	User   string `json:"user,omitempty"`
	// Scope holds every field of the request's scope, empty ones too.
	Scope map[string]string `json:"scope"`
}

// Score calls the service; see HTTPScorer.
func (s *HTTPScorer) Score(req *model.Request) Score {
	s.calls.Add(1)
	v, err := s.call(req)
	if err != nil {
		s.failures.Add(1)
		return Score{Value: s.fallback, Fallback: true}
	}
	return Score{Value: v}
}

func (s *HTTPScorer) call(req *model.Request) (float64, error) {
	body, err := json.Marshal(httpScoreRequest{ID: req.TaskID, Text: req.Text, System: req.System, User: req.User, Scope: req.Scope.Values()})
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(hr)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	var out struct {
		Score *float64 `json:"score"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return 0, err
	}
	if out.Score == nil || math.IsNaN(*out.Score) || *out.Score < 0 || *out.Score > 1 {
		return 0, fmt.Errorf("no score in [0,1]")
	}
	return *out.Score, nil
}
