package serve

import (
	"errors"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/openai"
)

// replyHeaders are the names setHeaders writes, in the canonical form
// Header.Set would give them, so it can store them directly.
var replyHeaders = []string{headerLeak, openai.HeaderCache, openai.HeaderModel, openai.HeaderRouteScore, openai.HeaderContract, headerAttempts}

const (
	headerLeak     = "X-Crab-Leak"
	headerAttempts = "X-Crab-Attempts"
)

// setHeaders writes the X-Crab-* response headers. It runs on every
// answer: their values share one allocation, and the names (replyHeaders)
// are stored as they are, without Header.Set's canonicalisation.
func (s *Server) setHeaders(h http.Header, resp *model.Response, err error) {
	vals := make([]string, 0, len(replyHeaders))
	set := func(name, v string) {
		vals = append(vals, v)
		h[name] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	cacheStatus, modelName, score, contractResult, attempts := "BYPASS", "", "none", "none", 0
	if resp != nil {
		switch resp.Trace.Cache {
		case model.CacheHit:
			cacheStatus = "HIT"
		case model.CacheMiss:
			cacheStatus = "MISS"
		}
		modelName = resp.Model
		if resp.Trace.Routed {
			score = strconv.FormatFloat(resp.Trace.RouteScore, 'f', 3, 64)
			if modelName == "" {
				modelName = resp.Trace.RouteModel
			}
		}
		attempts = resp.Trace.Attempts
		if s.contract != nil && resp.Trace.Validated {
			contractResult = "fail"
			if resp.Trace.ContractOK && err == nil {
				contractResult = "ok"
			}
		}
		if resp.Trace.Leak != "" {
			set(headerLeak, resp.Trace.Leak)
		}
	}
	if s.contract != nil && errors.Is(err, contract.ErrViolation) {
		contractResult = "fail"
	}
	set(openai.HeaderCache, cacheStatus)
	if modelName != "" {
		set(openai.HeaderModel, modelName)
	}
	set(openai.HeaderRouteScore, score)
	set(openai.HeaderContract, contractResult)
	set(headerAttempts, strconv.Itoa(attempts))
}

// reply writes a successful answer, streamed in chunks when asked, and
// returns when its first content byte was sent.
func (s *Server) reply(w http.ResponseWriter, c call, resp *model.Response) time.Time {
	id := numbered("chatcmpl-crab-", s.seq.Add(1))
	refusal := resp.FinishReason == model.FinishRefusal
	finish := resp.FinishReason
	if refusal || finish == "" {
		finish = model.FinishStop
	}
	if !c.stream {
		openaiwire.WriteCompletion(w, openaiwire.Completion{
			ID: id, Model: resp.Model, Created: s.now().Unix(), Content: resp.Content, Refusal: refusal,
			FinishReason: finish, TokensIn: resp.Usage.TokensIn, TokensOut: resp.Usage.TokensOut,
		})
		return s.now()
	}
	st := openaiwire.NewStream(w, id, s.now().Unix(), resp.Model)
	if st.Role() != nil {
		return time.Time{}
	}
	var first time.Time
	for _, piece := range chunks(resp.Content, 64) {
		if first.IsZero() {
			first = s.now()
		}
		if st.Content(piece, refusal) != nil {
			return first
		}
	}
	if st.Finish(finish) != nil {
		return first
	}
	if c.includeUsage && st.Usage(resp.Usage.TokensIn, resp.Usage.TokensOut) != nil {
		return first
	}
	st.Done()
	return first
}

// chunks splits s into pieces of at most n bytes, on rune boundaries.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		if i == 0 {
			i = n
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// statusRecorder remembers the status written, for the metrics.
type statusRecorder struct {
	http.ResponseWriter
	status  int
	errKind string // of crab's error answer; "" for an answer
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushing).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// numbered is prefix followed by n in decimal, built in one allocation.
func numbered(prefix string, n uint64) string {
	var buf [64]byte
	return string(strconv.AppendUint(append(buf[:0], prefix...), n, 10))
}
