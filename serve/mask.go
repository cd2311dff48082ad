package serve

import (
	"net/http"
	"runtime/debug"

	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/internal/redact"
)

// maskedResponse is the one writer every answer of the server goes
// through, whatever route wrote it: each header value and each byte of
// the body is masked with the server's secrets (redact.Set.Known) before
// it leaves, so no route — the ones there are and any added later — can
// send a client a configured credential, or a piece of one of 8 bytes or
// more, whatever an upstream put in what it answered. It also remembers
// whether anything was sent, for the answer to a recovered panic.
type maskedResponse struct {
	http.ResponseWriter
	secrets *redact.Set
	sent    bool
}

func (m *maskedResponse) WriteHeader(code int) {
	if !m.sent {
		m.sent = true
		m.maskHeader()
	}
	m.ResponseWriter.WriteHeader(code)
}

func (m *maskedResponse) Write(p []byte) (int, error) {
	if !m.sent {
		m.sent = true
		m.maskHeader()
	}
	return redact.WriteKnown(m.ResponseWriter, m.secrets, p)
}

// maskHeader masks the header values about to be sent.
func (m *maskedResponse) maskHeader() {
	if m.secrets.Len() == 0 {
		return
	}
	for _, vs := range m.ResponseWriter.Header() {
		for i, v := range vs {
			vs[i] = m.secrets.Known(v)
		}
	}
}

// Unwrap lets http.ResponseController reach the connection (flushing).
func (m *maskedResponse) Unwrap() http.ResponseWriter { return m.ResponseWriter }

// CodeInternal is the code of a 500: crab failed answering the request
// (a panic, recovered, counted in crab_serve_panics_total and logged).
const CodeInternal = "internal_error"

// recoverPanic, deferred by a handler, turns a panic of the handler into
// a logged, counted failure of that one request: answered with 500 when
// nothing was sent yet, else the connection is cut (the client must not
// take a half-written answer for a whole one). The process goes on.
func (s *Server) recoverPanic(w http.ResponseWriter, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v) // net/http's own way of cutting a connection
	}
	s.m.panics.WithLabelValues(panicRequest).Inc()
	s.logf("panic answering %s %s (recovered; the request failed): %v\n%s", r.Method, r.URL.Path, v, debug.Stack())
	if !sent(w) {
		s.writeError(w, "", http.StatusInternalServerError, openaiwire.ErrTypeServer, CodeInternal, "", "crab failed answering this request")
		return
	}
	panic(http.ErrAbortHandler)
}

// sent reports whether any of the answer on w has been sent.
func sent(w http.ResponseWriter) bool {
	for {
		switch x := w.(type) {
		case *maskedResponse:
			return x.sent
		case *statusRecorder:
			if x.status != 0 {
				return true
			}
			w = x.ResponseWriter
		default:
			return false
		}
	}
}
