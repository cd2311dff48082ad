package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/serve"
	"github.com/prometheus/client_golang/prometheus"
)

// TestServeGracefulShutdown: on SIGTERM (the command's context ending) a
// request in flight still gets its answer, and no new connection is
// accepted afterwards. The upstream holds the request until the listener
// is closed, so the order of events is fixed, not raced.
func TestServeGracefulShutdown(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		once.Do(func() { close(arrived) })
		<-release
		openaiwire.WriteCompletion(w, openaiwire.Completion{ID: "x", Model: "large", Content: "held answer", FinishReason: "stop", TokensIn: 10, TokensOut: 2})
	}))
	defer up.Close()
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	defer free()

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "keys.yaml"), []byte("keys:\n  - {key: sk-test, tenant: acme, permission: agent}\n"), 0o644)
	cfg := fmt.Sprintf("keys: keys.yaml\nmodels:\n  - {name: large, base_url: '%s/v1', stream: false}\n", up.URL)
	path := filepath.Join(dir, "serve.yaml")
	os.WriteFile(path, []byte(cfg), 0o644)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serveProxy(ctx, serveOptions{Config: path, Listen: "127.0.0.1:0", ShutdownTimeout: 30 * time.Second,
			Quiet: true, Stderr: io.Discard, Ready: func(a string) { ready <- a }})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}

	type answer struct {
		status int
		body   string
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions",
			strings.NewReader(`{"model":"large","messages":[{"role":"user","content":"My invoice was charged twice."}]}`))
		req.Header.Set("Authorization", "Bearer sk-test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- answer{status: resp.StatusCode, body: string(b)}
	}()
	select {
	case <-arrived:
	case a := <-got:
		t.Fatalf("the request was answered before it reached the upstream: %d %q, %v", a.status, a.body, a.err)
	case <-time.After(time.Minute):
		t.Fatal("the request never reached the upstream")
	}
	// The request is held upstream: stop, and wait until the listener no
	// longer accepts connections before letting the answer through.
	stop()
	closed := false
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			closed = true
			break
		}
		c.Close()
	}
	if !closed {
		t.Fatal("the listener still accepted connections a minute after shutdown began")
	}
	select {
	case a := <-got:
		t.Fatalf("the in-flight request ended before its upstream answered: %d %q, %v", a.status, a.body, a.err)
	default:
	}
	free()
	a := <-got
	if a.err != nil || a.status != 200 || !strings.Contains(a.body, "chat.completion") {
		t.Fatalf("in-flight request: got %d %q, %v; want its 200 answer", a.status, a.body, a.err)
	}
	if err := <-done; err != nil {
		t.Fatalf("serve: %v; want a clean shutdown", err)
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Error("a new request was accepted after shutdown")
	}
}

// TestServeBadConfig: exit 2 with one line naming the file, line and field.
func TestServeBadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "serve.yaml")
	os.WriteFile(filepath.Join(dir, "keys.yaml"), []byte("keys:\n  - {key: k, tenant: t, permission: p}\n"), 0o644)
	os.WriteFile(path, []byte("keys: keys.yaml\nmodels:\n  - {name: large, base_url: 'ftp://x'}\n"), 0o644)
	code, _, errs := crab(t, "", "serve", "--config", path)
	if code != 2 || !strings.Contains(errs, `serve.yaml:3: field "models.base_url"`) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Errorf("exit %d, stderr %q; want exit 2 and one line naming serve.yaml:3 and models.base_url", code, errs)
	}
	code, _, errs = crab(t, "", "sim-server", "--model", "x=medium")
	if code != 2 || !strings.Contains(errs, `kind "medium"`) {
		t.Errorf("sim-server: exit %d, stderr %q; want exit 2 naming the kind", code, errs)
	}
}

// TestServeDeployArm: crab serve --arm deploys an arm of the embedded
// default experiment as it was measured, simulated models in process: a
// cache arm answers the repeat from its cache, the router and cascade arms
// route, and every answer meets the contract.
func TestServeDeployArm(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.yaml")
	os.WriteFile(keys, []byte("keys:\n  - {key: sk-test, tenant: acme, permission: agent, lang: en}\n"), 0o644)
	for _, tc := range []struct {
		arm       string
		secondHit bool
		routed    bool
	}{
		{arm: "cache_scoped", secondHit: true},
		{arm: "combined", secondHit: true, routed: true},
		{arm: "router", routed: true},
		{arm: "cascade", routed: true},
	} {
		t.Run(tc.arm, func(t *testing.T) {
			t.Parallel()
			setup, err := loadServeSetup(serveOptions{Arm: tc.arm, Keys: keys})
			if err != nil {
				t.Fatal(err)
			}
			if setup.Arm.Name != tc.arm {
				t.Fatalf("deployed arm %q; want %q", setup.Arm.Name, tc.arm)
			}
			srv, err := serve.New(setup, serve.Options{Registry: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			ts := httptest.NewServer(srv)
			defer ts.Close()
			for i, wantCache := range []string{"MISS", map[bool]string{true: "HIT", false: "BYPASS"}[tc.secondHit]} {
				if setup.Arm.Cache == nil {
					wantCache = "BYPASS"
				}
				req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat/completions",
					strings.NewReader(`{"model":"auto","messages":[{"role":"user","content":"My invoice was charged twice this month, please refund one."}]}`))
				req.Header.Set("Authorization", "Bearer sk-test")
				req.Header.Set("X-Crab-Request-Id", "deploy-1")
				resp, err := ts.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("request %d: status %d; want 200: %s", i, resp.StatusCode, body)
				}
				if got := resp.Header.Get("X-Crab-Cache"); got != wantCache {
					t.Errorf("request %d: X-Crab-Cache %q; want %q", i, got, wantCache)
				}
				if got := resp.Header.Get("X-Crab-Contract"); wantCache != "HIT" && got != "ok" {
					t.Errorf("request %d: X-Crab-Contract %q; want ok", i, got)
				}
				if got := resp.Header.Get("X-Crab-Route-Score"); wantCache != "HIT" && tc.routed != (got != "none") {
					t.Errorf("request %d: X-Crab-Route-Score %q; routed want %v", i, got, tc.routed)
				}
				if !strings.Contains(string(body), `"content"`) {
					t.Errorf("request %d: no content in %s", i, body)
				}
			}
		})
	}
}

// TestServeDeployUnknownArm: an arm the experiment does not have is bad usage.
func TestServeDeployUnknownArm(t *testing.T) {
	t.Parallel()
	_, err := loadServeSetup(serveOptions{Arm: "nope", Keys: "keys.yaml"})
	if err == nil || !strings.Contains(err.Error(), `no arm "nope"`) {
		t.Fatalf("got %v; want an unknown arm error", err)
	}
}
