package simserver

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crab-testbed/crab/model/embed"
)

func cosine(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// /v1/embeddings through the go-openai client: deterministic vectors in
// which paraphrases are close and hard negatives are not.
func TestEmbeddingsEndpoint(t *testing.T) {
	t.Parallel()
	_, hs := newServer(t, Config{Models: models(t)})
	c, err := embed.NewOpenAI(embed.OpenAIConfig{BaseURL: hs.URL + "/v1", Model: EmbeddingModel})
	if err != nil {
		t.Fatal(err)
	}
	base := "Why was my card charged 49 EUR twice for the Pro plan?"
	texts := []string{
		base,
		"Hi! Why was my card charged 49 EUR twice for the Pro plan? Thanks",    // greeting
		"Why was my card chagred 49 EUR twice for the Pro plan?",               // typo
		"Why was my card charged 94 EUR twice for the Pro plan?",               // another amount
		"Why was my card not charged 49 EUR twice for the Pro plan?",           // negation
		"Why was my card charged 49 EUR twice for the Team plan?",              // another product
		"Why was my card charged 49 EUR twice for the Pro plan? Order A-1043.", // another identifier added
	}
	vecs, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := c.Embed(context.Background(), texts[:1])
	if cosine(vecs[0], again[0]) < 0.999999 {
		t.Fatalf("the same text embeds differently")
	}
	for i, want := range []bool{true, true, true, false, false, false, false} {
		sim := cosine(vecs[0], vecs[i])
		if close := sim >= 0.9; close != want {
			t.Errorf("%q: similarity %.3f; want close = %v", texts[i], sim, want)
		}
	}
	// base64, as go-openai asks for it.
	oc := goopenai.DefaultConfig("")
	oc.BaseURL = hs.URL + "/v1"
	res, err := goopenai.NewClientWithConfig(oc).CreateEmbeddings(context.Background(), goopenai.EmbeddingRequestStrings{
		Input: texts[:2], Model: EmbeddingModel, EncodingFormat: goopenai.EmbeddingEncodingFormatBase64})
	if err != nil || len(res.Data) != 2 || cosine(res.Data[0].Embedding, vecs[0]) < 0.999 {
		t.Fatalf("base64: %v, %d vectors", err, len(res.Data))
	}
}

func TestEmbeddingsBadInput(t *testing.T) {
	t.Parallel()
	_, hs := newServer(t, Config{Models: models(t)})
	for _, body := range []string{`{"input": 42}`, `{"input": []}`, `not json`, `{"input":"x","encoding_format":"int8"}`} {
		resp, err := http.Post(hs.URL+"/v1/embeddings", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: HTTP %d; want 400", body, resp.StatusCode)
		}
	}
	resp, err := http.Get(hs.URL + "/v1/embeddings")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: HTTP %d; want 405", resp.StatusCode)
	}
}

// The embeddings body decoder never panics, and whatever it accepts holds
// 1 to 2048 texts and a known encoding.
func FuzzDecodeEmbeddings(f *testing.F) {
	for _, s := range []string{`{"input":"hi","model":"m"}`, `{"input":["a","b"],"encoding_format":"base64"}`, `{"input":[]}`, `{"input":7}`, `[`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		texts, req, err := decodeEmbeddings(bytes.NewReader(body), 1<<20)
		if err != nil {
			return
		}
		if len(texts) == 0 || len(texts) > maxEmbedInputs {
			t.Fatalf("accepted %d texts", len(texts))
		}
		if f := req.EncodingFormat; f != "" && f != "float" && f != "base64" {
			t.Fatalf("accepted encoding %q", f)
		}
	})
}
