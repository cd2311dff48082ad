package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/internal/redact"
	"github.com/crab-testbed/crab/model/openai"
)

// EmbeddingsConfig passes POST /v1/embeddings through to an upstream that
// serves it: the body goes as the client sent it (the client names the
// upstream's embedding model), under crab's key check and body limit, with
// the upstream's credential. Embeddings are not cached, routed, checked
// against the contract or recorded. Without it /v1/embeddings is 404.
type EmbeddingsConfig struct {
	BaseURL   string `yaml:"base_url"`    // API root, e.g. http://127.0.0.1:8000/v1
	APIKeyEnv string `yaml:"api_key_env"` // environment variable holding the upstream API key
}

// validate checks the section; the message names what is wrong.
func (e *EmbeddingsConfig) validate() (field, msg string) {
	u, err := url.Parse(e.BaseURL)
	switch {
	case e.BaseURL == "":
		return "base_url", "required, e.g. http://127.0.0.1:8000/v1"
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "base_url", fmt.Sprintf("want an http:// or https:// URL, got %q", redact.URL(e.BaseURL))
	}
	return "", ""
}

// embeddings answers POST /v1/embeddings by passing it upstream.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	e := s.cfg.Embeddings
	if e == nil {
		s.refuse(w, r, "", http.StatusNotFound, openaiwire.ErrTypeNotFound, "not_found", "",
			"no such endpoint: /v1/embeddings (this deployment has no embeddings upstream; see embeddings in the configuration)")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.refuse(w, r, "", http.StatusMethodNotAllowed, openaiwire.ErrTypeInvalidRequest, "method_not_allowed", "", "use POST")
		return
	}
	if r.ContentLength > s.cfg.MaxBodyBytes {
		s.refuse(w, r, "", http.StatusRequestEntityTooLarge, openaiwire.ErrTypeInvalidRequest, CodeRequestTooLarge, "",
			fmt.Sprintf("the request body (Content-Length %d) is over the limit of %d bytes", r.ContentLength, s.cfg.MaxBodyBytes))
		return
	}
	if _, _, ok := s.identify(w, r, ""); !ok {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxBodyBytes+1))
	if err != nil {
		s.refuse(w, r, "", http.StatusBadRequest, openaiwire.ErrTypeInvalidRequest, CodeInvalidRequest, "", "reading the body: "+err.Error())
		return
	}
	if int64(len(body)) > s.cfg.MaxBodyBytes {
		s.refuse(w, r, "", http.StatusRequestEntityTooLarge, openaiwire.ErrTypeInvalidRequest, CodeRequestTooLarge, "",
			fmt.Sprintf("the request body is over the limit of %d bytes", s.cfg.MaxBodyBytes))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout.Std())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(e.BaseURL, "/")+"/embeddings", bytes.NewReader(body))
	if err != nil {
		s.writeError(w, "", http.StatusBadGateway, openaiwire.ErrTypeServer, CodeUpstreamError, "", "the embeddings upstream failed")
		return
	}
	req.Header.Set("Content-Type", "application/json")
	if s.embedKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.embedKey)
	}
	res, err := s.embedClient.Do(req)
	if err != nil {
		s.logf("embeddings: %v", err)
		s.writeError(w, "", http.StatusBadGateway, openaiwire.ErrTypeServer, CodeUpstreamError, "", "the embeddings upstream failed")
		return
	}
	defer res.Body.Close()
	if res.StatusCode >= 400 {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		s.logf("embeddings: upstream HTTP %d: %s", res.StatusCode, msg)
		status, typ, code, text := upstreamAnswer(&openai.StatusError{Status: res.StatusCode, Backend: "embeddings"})
		s.writeError(w, "", status, typ, code, "", text)
		return
	}
	// The answer is read whole, within max_answer_bytes, and checked
	// before any of it is sent: an upstream that never stops answering,
	// or that echoes crab's credential, is the upstream's fault.
	out, err := io.ReadAll(io.LimitReader(res.Body, s.cfg.MaxAnswerBytes+1))
	switch {
	case err != nil:
		s.logf("embeddings: reading the answer: %v", err)
	case int64(len(out)) > s.cfg.MaxAnswerBytes:
		err = fmt.Errorf("the answer is over max_answer_bytes (%d)", s.cfg.MaxAnswerBytes)
		s.logf("embeddings: %v", err)
	case s.secrets.Found(string(out)):
		err = errors.New("the answer holds a configured credential (withheld)")
		s.logf("embeddings: %v", err)
	}
	if err != nil {
		s.writeError(w, "", http.StatusBadGateway, openaiwire.ErrTypeServer, CodeUpstreamError, "", "the embeddings upstream failed")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(res.StatusCode)
	w.Write(out)
}
