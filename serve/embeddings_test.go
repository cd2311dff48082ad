package serve

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestEmbeddings: /v1/embeddings is passed through, body untouched, to the
// configured upstream under crab's key check; an upstream failure is
// crab's own 502; without the section it is an OpenAI-style 404.
func TestEmbeddings(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got string
	emb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = r.URL.Path + " " + string(b)
		mu.Unlock()
		if strings.Contains(string(b), "fail") {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":"e","usage":{"prompt_tokens":2,"total_tokens":2}}`)
	}))
	t.Cleanup(emb.Close)
	_, url := newFakeUpstream(t, nil)
	_, ps, _ := proxyOver(t, url, "embeddings: {base_url: \""+emb.URL+"/v1\"}\n")
	body := `{"model":"text-embedding-3-small","input":"hello"}`
	r := postEmbeddings(t, ps.URL, "sk-acme", body)
	mu.Lock()
	seen := got
	mu.Unlock()
	if r.status != 200 || !strings.Contains(r.body, `"embedding":[0.1,0.2]`) || seen != "/v1/embeddings "+body {
		t.Errorf("embeddings: %d %s, upstream saw %q; want 200 with the upstream's answer to the body as sent", r.status, r.body, seen)
	}
	if r := postEmbeddings(t, ps.URL, "sk-nope", body); r.status != 401 {
		t.Errorf("embeddings without a valid key: %d; want 401", r.status)
	}
	if r := postEmbeddings(t, ps.URL, "sk-acme", `{"model":"e","input":"fail"}`); r.status != 502 || r.errCode != CodeUpstreamError || strings.Contains(r.body, "boom") {
		t.Errorf("failing embeddings upstream: %d %s; want 502 %s without the upstream's words", r.status, r.body, CodeUpstreamError)
	}
	_, plain, _ := proxyOver(t, url, "")
	if r := postEmbeddings(t, plain.URL, "sk-acme", body); r.status != 404 || !strings.Contains(r.body, `"type":"not_found_error"`) {
		t.Errorf("embeddings without an upstream: %d %s; want an OpenAI-style 404", r.status, r.body)
	}
}

// postEmbeddings posts body to /v1/embeddings with key.
func postEmbeddings(t *testing.T, base, key, body string) result {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/embeddings", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := result{status: resp.StatusCode, header: resp.Header, body: string(b)}
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(b, &e)
	r.errCode = e.Error.Code
	return r
}
