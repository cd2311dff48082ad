// Package redistest starts real, throw-away redis-server processes for
// tests: on a free loopback port, without persistence.
//
// When redis-server is not installed a test that asks for one is skipped,
// unless the environment variable CI is set: in CI a missing server is a
// failure, so a green CI run always includes the Redis tests.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// ErrNotInstalled is returned by Launch when redis-server is not on PATH.
var ErrNotInstalled = errors.New("redistest: redis-server not installed")

// Server is a running redis-server.
type Server struct {
	// Addr is its loopback address, 127.0.0.1:PORT.
	Addr string
	stop func()
	dir  string
}

// Close stops the server and removes its directory.
func (s *Server) Close() {
	s.stop()
	os.RemoveAll(s.dir)
}

// Launch starts a redis-server on a free loopback port (retrying with
// another port if the one found is taken before the server binds it);
// args are added to its command line (e.g. "--requirepass", "pw").
func Launch(args ...string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotInstalled, err)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		s, err := launch(bin, args)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("redistest: redis-server did not start: %w", lastErr)
}

// Start launches a server for one test and stops it at the test's end.
func Start(t testing.TB) string {
	t.Helper()
	s, err := Launch()
	Require(t, err)
	t.Cleanup(s.Close)
	return s.Addr
}

// Require skips the test when err says redis-server is not installed and
// CI is not set, and fails it on any other error (or in CI).
func Require(t testing.TB, err error) {
	t.Helper()
	switch {
	case err == nil:
	case errors.Is(err, ErrNotInstalled) && os.Getenv("CI") == "":
		t.Skip("redis-server not installed; install it (Debian: apt-get install redis-server) to run the Redis tests")
	case errors.Is(err, ErrNotInstalled):
		t.Fatalf("%v (CI is set, so the Redis tests must run)", err)
	default:
		t.Fatal(err)
	}
}

var shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Shared returns the address of one server shared by every test of the
// binary, started on first use. Call StopShared from TestMain after m.Run.
// Tests sharing it keep apart by key prefix.
func Shared(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() { shared.srv, shared.err = Launch() })
	Require(t, shared.err)
	return shared.srv.Addr
}

// StopShared stops the shared server, if one was started.
func StopShared() {
	if shared.srv != nil {
		shared.srv.Close()
	}
}

func launch(bin string, args []string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--protected-mode", "yes", "--loglevel", "warning"}, args...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		os.RemoveAll(dir)
		return nil, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop := func() {
		cancel()
		<-done
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ping(addr) == nil {
			return &Server{Addr: addr, stop: stop, dir: dir}, nil
		}
		select {
		case <-done:
			cancel()
			os.RemoveAll(dir)
			return nil, fmt.Errorf("redis-server exited: %s", strings.TrimSpace(out.String()))
		default:
		}
		if time.Now().After(deadline) {
			stop()
			os.RemoveAll(dir)
			return nil, fmt.Errorf("redis-server on %s did not answer PING within 10s: %s", addr, strings.TrimSpace(out.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ping sends an inline PING and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") && !strings.HasPrefix(line, "-NOAUTH") { // NOAUTH: up, and wants a password
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}
