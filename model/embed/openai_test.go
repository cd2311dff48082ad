package embed

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/model/openai"
)

// endless answers every call with status and a body that never ends (a
// JSON array that keeps growing), until the client hangs up.
func endless(t *testing.T, status int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if _, err := w.Write([]byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5`)); err != nil {
			return
		}
		chunk := []byte(strings.Repeat(",0.125", 4096))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestOpenAIEndlessAnswer: an upstream that never stops answering is an
// error wrapping ErrEmbed and openai.ErrAnswerTooLarge, read no further
// than the bound, whether its status says success or failure.
func TestOpenAIEndlessAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
	}{{"ok", http.StatusOK}, {"error", http.StatusInternalServerError}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := endless(t, tc.status)
			e, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			vs, err := e.Embed(context.Background(), []string{"where is my order?"})
			if !errors.Is(err, ErrEmbed) || !errors.Is(err, openai.ErrAnswerTooLarge) {
				t.Fatalf("err = %v (vectors %d); want ErrEmbed and ErrAnswerTooLarge", err, len(vs))
			}
		})
	}
}

// TestOpenAIAnswerWithinBound: an answer within the bound is read whole.
func TestOpenAIAnswerWithinBound(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[3,4]},{"object":"embedding","index":1,"embedding":[0,2]}]}`))
	}))
	t.Cleanup(srv.Close)
	e, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := e.Embed(context.Background(), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0][0] != 0.6 || vs[0][1] != 0.8 || vs[1][1] != 1 {
		t.Fatalf("vectors = %v; want [[0.6 0.8] [0 1]]", vs)
	}
}

// TestAnswerLimit: one text gets a chat answer's bound, a large batch a
// bound that grows with it.
func TestAnswerLimit(t *testing.T) {
	t.Parallel()
	if got := AnswerLimit(1); got != openai.DefaultMaxAnswerBytes {
		t.Errorf("AnswerLimit(1) = %d; want %d", got, openai.DefaultMaxAnswerBytes)
	}
	if got, want := AnswerLimit(1000), int64(1000*maxVectorBytes); got != want {
		t.Errorf("AnswerLimit(1000) = %d; want %d", got, want)
	}
}
