package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/openai"
)

// Error codes crab serve answers with, in the OpenAI error format's code
// field. They are crab's own and stable: a client may switch on them. No
// upstream text ever reaches a client; the upstream's status and message
// go to the log, with credentials masked, under the request id.
const (
	CodeInvalidAPIKey      = "invalid_api_key"       // 401: missing or unknown API key
	CodeTooManyRequests    = "too_many_requests"     // 429: the key's requests in flight are at max_in_flight_per_key
	CodeTooManyConnections = "too_many_connections"  // 429: the key's open connections are at max_conns_per_key; the connection is closed
	CodeBodyTimeout        = "body_timeout"          // 408: the body did not arrive within body_timeout
	CodeRequestTooLarge    = "request_too_large"     // 413: the body is over max_body_bytes
	CodeInvalidRequest     = "invalid_request"       // 400: the body is not a chat completion request crab can answer
	CodeUnsupportedMessage = "unsupported_message"   // 400: a tool or function message (crab does not pass tools)
	CodeModelNotFound      = "model_not_found"       // 404: no such model
	CodeContractViolation  = "contract_violation"    // 502: the answer breaks the output contract
	CodeTimeout            = "timeout"               // 504: no answer within the request timeout
	CodeUpstreamAuth       = "upstream_auth"         // 502: the upstream refused crab's credential (401, 403)
	CodeUpstreamRateLimit  = "upstream_rate_limited" // 429: the upstream is rate limiting crab
	CodeUpstreamBusy       = "upstream_unavailable"  // 503: the upstream is overloaded or down
	CodeUpstreamRejected   = "upstream_rejected"     // 502: the upstream refused the request (another 4xx)
	CodeUpstreamError      = "upstream_error"        // 502: the upstream failed (5xx, network, a broken answer)
)

// upstreamAnswer maps an upstream failure to the status, type, code and
// message crab answers with: crab's own words, the upstream's status code
// only.
func upstreamAnswer(se *openai.StatusError) (status int, typ, code, msg string) {
	switch s := se.Status; {
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return http.StatusBadGateway, openaiwire.ErrTypeServer, CodeUpstreamAuth,
			fmt.Sprintf("the upstream model %s refused crab's credential (HTTP %d)", se.Backend, s)
	case s == http.StatusTooManyRequests:
		return http.StatusTooManyRequests, openaiwire.ErrTypeRateLimit, CodeUpstreamRateLimit,
			fmt.Sprintf("the upstream model %s is rate limiting (HTTP 429); retry later", se.Backend)
	case s == http.StatusServiceUnavailable:
		return http.StatusServiceUnavailable, openaiwire.ErrTypeServer, CodeUpstreamBusy,
			fmt.Sprintf("the upstream model %s is unavailable (HTTP 503); retry later", se.Backend)
	case s >= 400 && s < 500 && s != http.StatusRequestTimeout:
		return http.StatusBadGateway, openaiwire.ErrTypeServer, CodeUpstreamRejected,
			fmt.Sprintf("the upstream model %s refused the request (HTTP %d)", se.Backend, s)
	}
	return http.StatusBadGateway, openaiwire.ErrTypeServer, CodeUpstreamError,
		fmt.Sprintf("the upstream model %s failed (HTTP %d)", se.Backend, se.Status)
}

// fail writes the error response for a failed stack call and logs what
// the upstream said.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, reqID string, resp *model.Response, err error, timedOut bool) {
	var se *openai.StatusError
	switch {
	case errors.Is(err, contract.ErrViolation):
		// The client learns which rules were broken, from crab's fixed
		// set; the violations themselves quote the answer, so they go to
		// the log only.
		var rules []string
		if resp != nil {
			seen := map[string]bool{}
			for _, v := range resp.Trace.Violations {
				if r := violationRule(v); !seen[r] {
					seen[r] = true
					rules = append(rules, r)
				}
			}
			s.logf("request %s: contract violations: %s", reqID, strings.Join(resp.Trace.Violations, "; "))
		}
		msg := "the answer does not meet the output contract"
		if len(rules) > 0 {
			msg += " (rules broken: " + strings.Join(rules, ", ") + ")"
		}
		s.writeError(w, reqID, http.StatusBadGateway, openaiwire.ErrTypeServer, CodeContractViolation, "", msg)
	case timedOut || errors.Is(err, context.DeadlineExceeded):
		s.logf("request %s: %v", reqID, err)
		s.writeError(w, reqID, http.StatusGatewayTimeout, openaiwire.ErrTypeServer, CodeTimeout, "",
			fmt.Sprintf("no answer within %v", s.cfg.Timeout.Std()))
	case r.Context().Err() != nil:
		// The client left: nobody to answer.
	case errors.As(err, &se):
		s.logf("request %s: upstream %s: HTTP %d: type %q code %q: %s", reqID, se.Backend, se.Status,
			s.mask(se.Type), s.mask(se.Code), s.mask(se.Message))
		status, typ, code, msg := upstreamAnswer(se)
		s.writeError(w, reqID, status, typ, code, "", msg)
	case errors.Is(err, model.ErrUnknownModel):
		s.writeError(w, reqID, http.StatusNotFound, openaiwire.ErrTypeNotFound, CodeModelNotFound, "model", "no such model")
	default:
		s.logf("request %s: %v", reqID, err)
		s.writeError(w, reqID, http.StatusBadGateway, openaiwire.ErrTypeServer, CodeUpstreamError, "", "the upstream model failed")
	}
}

// writeError writes crab's error in the OpenAI format, the request id
// appended to the message (and in the X-Crab-Request-Id header) so a
// client can quote it, and masked like everything crab writes.
func (s *Server) writeError(w http.ResponseWriter, reqID string, status int, typ, code, param, msg string) {
	if rec, ok := w.(*statusRecorder); ok {
		rec.errKind = errorKind(code)
	}
	if reqID != "" {
		msg += " (request " + reqID + ")"
	}
	openaiwire.WriteError(w, status, typ, code, param, s.mask(msg))
}

// refuse answers a request crab will not run before its body was read
// (or while it was being read): the connection is closed after the
// answer, so the server does not wait for the rest of a body it will
// never use.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, reqID string, status int, typ, code, param, msg string) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	s.writeError(w, reqID, status, typ, code, param, msg)
}

// refuseConn refuses a request on a new connection of an API key that
// already holds max_conns_per_key connections, and closes the connection.
func (s *Server) refuseConn(w http.ResponseWriter, r *http.Request, reqID string) {
	w.Header().Set("Connection", "close")
	s.writeError(w, reqID, http.StatusTooManyRequests, openaiwire.ErrTypeRateLimit, CodeTooManyConnections, "",
		fmt.Sprintf("this API key holds %d connections, the most allowed: send requests over those, or close some", s.cfg.MaxConnsPerKey))
}

// mask masks every credential in text going to a client or the log: the
// upstream API keys crab was configured with, and anything that looks
// like a credential.
func (s *Server) mask(text string) string { return s.secrets.String(text) }

// logf writes a line to the server's log, if it has one: every line is
// masked here, whatever its arguments hold, so no log line can carry a
// configured credential.
func (s *Server) logf(format string, args ...any) {
	if s.log != nil {
		s.log("%s", s.mask(fmt.Sprintf(format, args...)))
	}
}
