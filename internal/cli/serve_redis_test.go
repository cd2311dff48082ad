package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crab-testbed/crab/internal/redistest"
)

// String is what was written so far.
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeWarnsOfUntaggedRedis: replicas sharing a Redis store without
// tag_key_env never serve each other's entries and overwrite them, so
// crab serve says so when it starts; with tag_key_env it says nothing.
func TestServeWarnsOfUntaggedRedis(t *testing.T) {
	addr := redistest.Start(t)
	t.Setenv("CRAB_TEST_TAG_KEY", "a-deployment-secret-of-32-bytes!")
	for _, tc := range []struct {
		name, extra string
		warn        bool
	}{
		{name: "without tag_key_env", warn: true},
		{name: "with tag_key_env", extra: "  tag_key_env: CRAB_TEST_TAG_KEY\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "keys.yaml"), []byte("keys:\n  - {key: sk-test, tenant: acme, permission: agent}\n"), 0o644)
			cfg := fmt.Sprintf("keys: keys.yaml\nmodels:\n  - {name: large, base_url: 'http://127.0.0.1:9/v1', stream: false}\ncache:\n  store: redis\n  redis_addr: '%s'\n%s", addr, tc.extra)
			path := filepath.Join(dir, "serve.yaml")
			os.WriteFile(path, []byte(cfg), 0o644)
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			var stderr syncBuffer
			ready := make(chan string, 1)
			done := make(chan error, 1)
			go func() {
				done <- serveProxy(ctx, serveOptions{Config: path, Listen: "127.0.0.1:0", ShutdownTimeout: 30 * time.Second,
					Stderr: &stderr, Ready: func(a string) { ready <- a }})
			}()
			select {
			case <-ready:
			case err := <-done:
				t.Fatalf("serve: %v", err)
			}
			stop()
			if err := <-done; err != nil {
				t.Fatalf("serve: %v", err)
			}
			if got := strings.Contains(stderr.String(), "no tag_key_env is set"); got != tc.warn {
				t.Errorf("warned %v; want %v; stderr:\n%s", got, tc.warn, stderr.String())
			}
		})
	}
}
