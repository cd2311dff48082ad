package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestMain runs the tests from the module root, where a user types crab's
// commands: the paths they name (fixtures/, examples/, testdata/, docs/)
// and the paths crab prints back are the ones the docs show.
func TestMain(m *testing.M) {
	root, err := moduleRoot()
	if err == nil {
		err = os.Chdir(root)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// moduleRoot is the nearest directory above the working directory that
// holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
}

// skipShort skips a test that runs whole experiments, tuning sweeps or a
// browser under go test -short, the edit-test loop; the README's test
// command and CI run it.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs whole experiments or a browser; skipped under -short")
	}
}

// cliMu serialises the parsing of in-process runs: urfave/cli's help
// flag is a package variable that every App writes while parsing. The
// lock is let go as the command's action starts, so that whole runs,
// tuning sweeps and servers of parallel tests work at once.
var cliMu sync.Mutex

// crab runs the command line in-process and returns its exit code and output.
func crab(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cliMu.Lock()
	release := sync.OnceFunc(cliMu.Unlock)
	parsed = release
	defer release()
	var out, errb bytes.Buffer
	code := Main(context.Background(), append([]string{"crab"}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

type armJSON struct {
	Name        string   `json:"name"`
	N           int      `json:"n"`
	Pass        int      `json:"pass"`
	P95         float64  `json:"p95_ms"`
	Cost        float64  `json:"cost"`
	CostPerPass *float64 `json:"cost_per_pass"`
	Verdict     string   `json:"verdict"`
	Reasons     []string `json:"reasons"`
}

type summaryJSON struct {
	Arms []armJSON `json:"arms"`
}

// syncBuffer is a bytes.Buffer that goroutines may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
