package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crab-testbed/crab/serve"
)

// scanSecrets are 20 distinctive credentials of 5 formats: 10 upstream API
// keys (sk-..., hex, base64-ish, JWT-like) and 10 passwords of
// user:password upstream URLs.
type scanSecrets struct {
	keys, passwords []string
}

func newScanSecrets(seed int64) scanSecrets {
	rng := rand.New(rand.NewSource(seed))
	pick := func(alpha string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alpha[rng.Intn(len(alpha))]
		}
		return string(b)
	}
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var s scanSecrets
	for i := range 10 {
		switch i % 4 {
		case 0:
			s.keys = append(s.keys, "sk-proj-"+pick(alnum+"_-", 40))
		case 1:
			s.keys = append(s.keys, pick("0123456789abcdef", 48))
		case 2:
			s.keys = append(s.keys, pick(alnum+"+/", 43)+"=")
		case 3:
			s.keys = append(s.keys, "eyJ"+pick(alnum+"_-", 30)+"."+pick(alnum+"_-", 40)+"."+pick(alnum+"_-", 32))
		}
		s.passwords = append(s.passwords, pick(alnum, 28))
	}
	return s
}

func (s scanSecrets) all() []string { return append(append([]string(nil), s.keys...), s.passwords...) }

// leak returns the first 8-byte piece of a secret found in b, or "".
func (s scanSecrets) leak(b []byte) string {
	for _, k := range s.all() {
		for i := 0; i+8 <= len(k); i++ {
			if bytes.Contains(b, []byte(k[i:i+8])) {
				return k[i : i+8]
			}
		}
	}
	return ""
}

// hostileUpstream is an OpenAI-compatible server that echoes every
// credential it knows: in error messages (after 480 bytes of padding, so a
// cut at 512 bytes falls inside one), in plain-text error bodies, in
// response headers and inside a 200 answer's content; every fourth answer
// is a good one.
func hostileUpstream(t *testing.T, s scanSecrets, failModels bool) *httptest.Server {
	var n atomic.Int64
	everything := strings.Join(s.all(), " ")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		user := ""
		if u, p, ok := r.BasicAuth(); ok {
			user = u + ":" + p
		}
		w.Header().Set("X-Echo", auth+" "+everything)
		if strings.HasSuffix(r.URL.Path, "/models") {
			if failModels {
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, `{"error":{"message":"%s bad key: %s (%s)","type":"invalid_request_error"}}`, strings.Repeat("p", 480), auth, user)
				return
			}
			io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		io.Copy(io.Discard, r.Body)
		answerWith := func(content, finish string, in int) {
			b, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion", "model": "m",
				"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": map[string]any{"role": "assistant", "content": content}}},
				"usage":   map[string]any{"prompt_tokens": in, "completion_tokens": 5}})
			w.Header().Set("Content-Type", "application/json")
			w.Write(b)
		}
		answer := func(content string) { answerWith(content, "stop", 10) }
		switch i := n.Add(1); i % 6 {
		case 4:
			// The key, or another secret, as the finish reason.
			answerWith(`{"answer":"fine"}`, []string{strings.TrimPrefix(auth, "Bearer "), s.all()[i%20]}[i%2], 10)
		case 5:
			// Usage out of range: negative, or larger than any model's.
			answerWith(`{"answer":"fine"}`, "stop", []int{-int(i), 1 << 40}[i%2])
		case 0:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			msg, _ := json.Marshal(strings.Repeat("p", 480) + auth + " " + everything)
			fmt.Fprintf(w, `{"error":{"message":%s,"type":"invalid_request_error","code":%q}}`, msg, auth)
		case 1:
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, strings.Repeat("p", 480)+auth+" "+everything)
		case 2:
			b, _ := json.Marshal(map[string]string{"answer": "your key is " + strings.TrimPrefix(auth, "Bearer ")[:20]})
			answer(string(b))
		default:
			answer(`{"answer":"fine"}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// writeScanFiles writes the contract, the tasks and the model list of
// both the experiment and the serve configuration, every model behind a
// user:password URL of the hostile upstream with its own API key.
func writeScanFiles(t *testing.T, dir string, s scanSecrets, upstream string) (models string) {
	os.WriteFile(filepath.Join(dir, "c.json"), []byte(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}`), 0o644)
	var tasks strings.Builder
	for i := range 12 {
		fmt.Fprintf(&tasks, `{"id":"t%d","text":"question %d","tenant":"acme","user":"u","permission":"agent","lang":"en","doc_version":"v1"}`+"\n", i, i%6)
	}
	os.WriteFile(filepath.Join(dir, "tasks.jsonl"), []byte(tasks.String()), 0o644)
	u, _ := url.Parse(upstream)
	var b strings.Builder
	for i := range s.keys {
		env := fmt.Sprintf("CRAB_SCAN_KEY_%d", i)
		t.Setenv(env, s.keys[i])
		fmt.Fprintf(&b, "  - {name: m%d, backend: openai, stream: false, base_url: \"http://user%d:%s@%s/v1\", model: m, api_key_env: %s}\n", i, i, s.passwords[i], u.Host, env)
	}
	return b.String()
}

// TestSecretsNeverLeave runs an experiment and serves traffic against an
// upstream that echoes 20 credentials of 5 formats everywhere it can, and
// scans every byte crab wrote, printed and sent: no 8-byte piece of any
// of them.
func TestSecretsNeverLeave(t *testing.T) {
	s := newScanSecrets(25)
	scan := func(what string, b []byte) {
		t.Helper()
		if l := s.leak(b); l != "" {
			i := bytes.Index(b, []byte(l))
			t.Errorf("%s holds %q of a secret: ...%s...", what, l, b[max(0, i-60):min(len(b), i+60)])
		}
	}
	t.Run("run", func(t *testing.T) {
		dir := t.TempDir()
		up := hostileUpstream(t, s, false)
		models := writeScanFiles(t, dir, s, up.URL)
		var arms strings.Builder
		for i := range s.keys {
			fmt.Fprintf(&arms, "  - {name: a%d, model: m%d, cache: {key: full}}\n", i, i)
		}
		exp := filepath.Join(dir, "exp.yaml")
		os.WriteFile(exp, []byte("name: scan\ntasks: tasks.jsonl\ncontract: c.json\narrival: {pattern: burst}\nshadow: false\nrecord: true\nmodels:\n"+models+"arms:\n"+arms.String()), 0o644)
		out := filepath.Join(dir, "run")
		code, stdout, stderr := crab(t, "", "run", "-e", exp, "-o", out)
		if code != 0 {
			t.Fatalf("exit %d, stderr %s", code, stderr)
		}
		scan("stdout", []byte(stdout))
		scan("stderr", []byte(stderr))
		files, _ := os.ReadDir(out)
		if len(files) < 5 {
			t.Fatalf("run directory holds %d files; want records, manifest and reports", len(files))
		}
		for _, f := range files {
			b, _ := os.ReadFile(filepath.Join(out, f.Name()))
			scan(f.Name(), b)
		}
		recs, _ := os.ReadFile(filepath.Join(out, "records.jsonl"))
		for _, want := range []string{"configured credential", "finish reason is not one", "usage report is out of range"} {
			if !bytes.Contains(recs, []byte(want)) {
				t.Errorf("records.jsonl: no request failed with %q; want some", want)
			}
		}
		if rec, _ := os.ReadFile(filepath.Join(out, "recording.jsonl")); len(bytes.Split(rec, []byte("\n"))) < 12 {
			t.Errorf("recording.jsonl holds %d bytes; want the calls recorded", len(rec))
		}
		// The preflight of an upstream that echoes the Authorization it got.
		bad := hostileUpstream(t, s, true)
		os.WriteFile(exp, []byte("name: scan\ntasks: tasks.jsonl\ncontract: c.json\narrival: {pattern: burst}\nmodels:\n"+
			strings.ReplaceAll(models, strings.TrimPrefix(up.URL, "http://"), strings.TrimPrefix(bad.URL, "http://"))+"arms:\n  - {name: a, model: m3}\n"), 0o644)
		code, stdout, stderr = crab(t, "", "run", "-e", exp, "-o", filepath.Join(dir, "run2"))
		if code != 1 || !strings.Contains(stderr, "does not answer") {
			t.Errorf("preflight: exit %d, stderr %q; want exit 1 naming the server", code, stderr)
		}
		scan("preflight stderr", []byte(stdout+stderr))
	})
	t.Run("serve", func(t *testing.T) {
		dir := t.TempDir()
		up := hostileUpstream(t, s, false)
		models := writeScanFiles(t, dir, s, up.URL)
		os.WriteFile(filepath.Join(dir, "keys.yaml"), []byte("keys:\n  - {key: client-key, tenant: acme, permission: agent}\n"), 0o644)
		cfg := filepath.Join(dir, "serve.yaml")
		os.WriteFile(cfg, []byte("keys: keys.yaml\ncontract: {file: c.json}\ncache: {key: full}\nmodels:\n"+
			strings.ReplaceAll(models, "backend: openai, ", "")), 0o644)
		setup, err := serve.Load(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		reg := prometheus.NewRegistry()
		srv, err := serve.New(setup, serve.Options{Registry: reg, Logf: func(f string, a ...any) { fmt.Fprintf(&log, f+"\n", a...) }})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		front := httptest.NewServer(srv)
		defer front.Close()
		var sent bytes.Buffer
		get := func(req *http.Request) {
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			res.Header.Write(&sent)
			io.Copy(&sent, res.Body)
		}
		for i := range 40 {
			body := fmt.Sprintf(`{"model":"m%d","messages":[{"role":"user","content":"question %d"}]}`, i%len(s.keys), i%7)
			req, _ := http.NewRequest(http.MethodPost, front.URL+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer client-key")
			req.Header.Set("Content-Type", "application/json")
			get(req)
		}
		req, _ := http.NewRequest(http.MethodGet, front.URL+"/metrics", nil)
		get(req)
		if !bytes.Contains(sent.Bytes(), []byte("crab_serve_requests_total")) {
			t.Fatal("no metrics read")
		}
		scan("HTTP answers and /metrics", sent.Bytes())
		scan("serve log", log.Bytes())
		if log.Len() == 0 {
			t.Error("serve log is empty; want the upstream failures logged")
		}
	})
}
