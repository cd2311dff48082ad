package openai

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crab-testbed/crab/model"
)

// StatusError is an HTTP error status from the server, with the server's
// message. It wraps model.ErrBackend.
type StatusError struct {
	Backend string // the backend's name
	Status  int    // HTTP status code, e.g. 429
	Type    string // the OpenAI error type, e.g. "rate_limit_error"; may be empty
	Code    string // the OpenAI error code, e.g. "rate_limit_exceeded"; may be empty
	Message string // the server's message, at most maxErrorMessage bytes
	// Wait is the delay the server asked for before the next call
	// (Retry-After, in seconds or as an HTTP date); 0 when none.
	Wait time.Duration
}

// HTTPStatus is the server's status, for the retry policy.
func (e *StatusError) HTTPStatus() int { return e.Status }

// RetryAfter is the delay the server asked for, for the retry policy.
func (e *StatusError) RetryAfter() time.Duration { return e.Wait }

var (
	_ model.HTTPStatusError = (*StatusError)(nil)
	_ model.RetryAfterError = (*StatusError)(nil)
)

// maxErrorBody bounds how much of an error answer's body is read, and
// maxErrorMessage how much of its message is kept: a hostile or broken
// server cannot make crab hold megabytes per failed call.
const (
	maxErrorBody    = 64 << 10
	maxErrorMessage = 512
)

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP
// date (relative to now). Anything else, or a time in the past, is 0.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, 24*3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Error says which backend failed, with what status and message.
func (e *StatusError) Error() string {
	return fmt.Sprintf("%v: %s: HTTP %d %s: %s", model.ErrBackend, e.Backend, e.Status, http.StatusText(e.Status), e.Message)
}

// Unwrap returns model.ErrBackend.
func (e *StatusError) Unwrap() error { return model.ErrBackend }

// statusError turns go-openai's HTTP errors into a *StatusError and leaves
// every other error as it is.
func statusError(err error) error {
	var ae *goopenai.APIError
	if errors.As(err, &ae) && ae.HTTPStatusCode > 0 {
		code := ""
		if ae.Code != nil {
			code = fmt.Sprint(ae.Code)
		}
		return &StatusError{Status: ae.HTTPStatusCode, Type: ae.Type, Code: code, Message: ae.Message}
	}
	var re *goopenai.RequestError
	if errors.As(err, &re) && re.HTTPStatusCode > 0 {
		msg := strings.TrimSpace(string(re.Body))
		if msg == "" {
			msg = http.StatusText(re.HTTPStatusCode)
		}
		return &StatusError{Status: re.HTTPStatusCode, Message: msg}
	}
	return err
}
