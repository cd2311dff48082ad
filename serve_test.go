package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeGracefulShutdown: on SIGTERM (the command's context ending) a
// request in flight still gets its answer, and no new connection is
// accepted afterwards.
func TestServeGracefulShutdown(t *testing.T) {
	t.Parallel()
	simCtx, stopSim := context.WithCancel(context.Background())
	defer stopSim()
	// time-scale 0.2: a full answer of the large model takes about half a second
	up := startSimServer(t, simCtx, simServerOptions{Listen: "127.0.0.1:0", TimeScale: 0.2, Seed: 1, ShutdownTimeout: time.Second})

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "keys.yaml"), []byte("keys:\n  - {key: sk-test, tenant: acme, permission: agent}\n"), 0o644)
	cfg := fmt.Sprintf("keys: keys.yaml\nmodels:\n  - {name: large, base_url: 'http://%s/v1'}\n", up)
	path := filepath.Join(dir, "serve.yaml")
	os.WriteFile(path, []byte(cfg), 0o644)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serveProxy(ctx, serveOptions{Config: path, Listen: "127.0.0.1:0", ShutdownTimeout: 10 * time.Second,
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
	// Wait until the request is in flight, then stop.
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "crab_serve_requests_in_flight 1") {
			break
		}
		if i == 500 {
			t.Fatal("the request never showed as in flight")
		}
		time.Sleep(2 * time.Millisecond)
	}
	stop()
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
