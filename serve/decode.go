package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/openai"
	"github.com/crab-testbed/crab/stack"
)

// call is one decoded client request.
type call struct {
	req          *model.Request
	stream       bool
	includeUsage bool
	dropped      []string // parameters drop_params dropped
}

// decode reads and checks the request and builds the stack's request.
func (s *Server) decode(r *http.Request, id Identity, reqID string) (c call, status int, code, param string, err error) {
	creq, raw, lean, err := s.dec.ReadRequestBody(r, s.cfg.MaxBodyBytes)
	if err != nil {
		var pe *openaiwire.ParamError
		switch {
		case errors.As(err, &pe):
			return c, http.StatusBadRequest, "unsupported_value", pe.Param, errors.New(pe.Msg)
		case errors.Is(err, os.ErrDeadlineExceeded):
			return c, http.StatusRequestTimeout, CodeBodyTimeout, "",
				fmt.Errorf("the request body did not arrive within %v", s.cfg.BodyTimeout.Std())
		case errors.Is(err, openaiwire.ErrTooLarge):
			return c, http.StatusRequestEntityTooLarge, CodeRequestTooLarge, "", err
		}
		return c, http.StatusBadRequest, CodeInvalidRequest, "", err
	}
	pass, dropped, err := s.params(creq, raw, lean)
	if err != nil {
		pe := err.(*paramError)
		return c, http.StatusBadRequest, pe.code, pe.param, err
	}
	//lint:ignore SA1019 max_tokens is what older clients send; it is checked as they sent it
	if creq.MaxTokens < 0 || creq.MaxCompletionTokens < 0 {
		return c, http.StatusBadRequest, "invalid_max_tokens", "max_tokens", errors.New("max_tokens and max_completion_tokens must not be negative")
	}
	if t := creq.Temperature; t < 0 || t > 2 || t != t {
		return c, http.StatusBadRequest, "invalid_temperature", "temperature", errors.New("temperature must be between 0 and 2")
	}
	system, history, text, err := openaiwire.Prompt(creq.Messages)
	if err != nil {
		code := CodeInvalidRequest
		if errors.Is(err, openaiwire.ErrToolMessage) {
			code = CodeUnsupportedMessage
		}
		return c, http.StatusBadRequest, code, "messages", err
	}
	name := creq.Model
	if name == AutoModel {
		name = ""
		if s.arm.Router == nil {
			name = s.arm.Model
		}
	} else if !s.models[name] {
		return c, http.StatusNotFound, CodeModelNotFound, "model", fmt.Errorf("model %q does not exist (available: %s)", creq.Model, strings.Join(s.names, ", "))
	}
	pick := func(header, key, fallback string) string {
		if v := r.Header.Get(header); v != "" {
			return v
		}
		if v := creq.Metadata[key]; v != "" {
			return v
		}
		return fallback
	}
	scope := model.Scope{
		Tenant: id.Tenant, Permission: id.Permission,
		Lang:       pick(openai.HeaderLang, "lang", firstNonEmpty(id.Lang, s.cfg.DefaultLang)),
		DocVersion: pick(openai.HeaderDocVersion, "doc_version", firstNonEmpty(id.DocVersion, s.cfg.DefaultDocVersion)),
	}
	if scope.Lang != "" && !validLang(scope.Lang) {
		return c, http.StatusBadRequest, "invalid_lang", openai.HeaderLang, fmt.Errorf("language %q: want a tag such as en or pt-BR", scope.Lang)
	}
	if scope.DocVersion != "" && !validDocVersion(scope.DocVersion) {
		return c, http.StatusBadRequest, "invalid_doc_version", openai.HeaderDocVersion, fmt.Errorf("document version %q: want letters, digits and . _ : - (at most 64)", scope.DocVersion)
	}
	mode := pick(openai.HeaderMode, "mode", s.arm.Mode)
	if !stack.ValidMode(mode) {
		return c, http.StatusBadRequest, "invalid_mode", openai.HeaderMode, fmt.Errorf("mode %q: want full, short or over_short", mode)
	}
	req := &model.Request{
		TaskID: reqID, Text: text, System: system, History: history, User: creq.User, Scope: scope, Model: name,
		Mode: mode, MaxTokens: openaiwire.MaxTokens(creq), Temperature: float64(creq.Temperature),
	}
	// A deployed arm's system prompt and output budget apply when the
	// client sends none, as they did in the measured run.
	if req.System == "" {
		req.System = s.arm.System
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = s.arm.MaxTokens
	}
	if creq.Seed != nil {
		req.Seed = int64(*creq.Seed)
	}
	req.Params = pass
	if err := s.responseFormat(creq, req); err != nil {
		pe := err.(*paramError)
		return c, http.StatusBadRequest, pe.code, pe.param, err
	}
	if s.contract == nil {
		if schema := openaiwire.Schema(creq); schema != nil {
			sum := sha256.Sum256(schema)
			req.Contract, req.ContractHash = schema, hex.EncodeToString(sum[:])
		}
	}
	c = call{req: req, stream: creq.Stream, includeUsage: creq.StreamOptions != nil && creq.StreamOptions.IncludeUsage, dropped: dropped}
	return c, 0, "", "", nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
