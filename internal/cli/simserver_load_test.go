package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/model/openai"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/model/simserver"
)

// TestSimServerLoadFlags: settings of varying answers and capacity that
// mean nothing are bad usage (exit 2, naming the flag) before anything
// listens.
func TestSimServerLoadFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--vary-share", "1.5"}, "--vary-share 1.5"},
		{[]string{"--vary-flip", "-0.1"}, "--vary-flip -0.1"},
		{[]string{"--slots", "-1"}, "--slots -1"},
		{[]string{"--slots", "4", "--max-queue", "-1"}, "--max-queue -1"},
		{[]string{"--slowdown", "0.1"}, "need --slots"},
		{[]string{"--slots", "4", "--call-log", filepath.Join(t.TempDir(), "no", "such", "dir", "calls.jsonl")}, "--call-log"},
	} {
		code, _, errs := crab(t, "", append([]string{"sim-server", "--listen", "127.0.0.1:0"}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestSimServerCallLog: --call-log writes every call that reaches a model
// as a line of JSON, with the caller the client named, and the file is
// complete once the server has stopped.
func TestSimServerCallLog(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "calls.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- simServe(ctx, simServerOptions{Listen: "127.0.0.1:0", TimeScale: 0, Seed: 1, Stderr: io.Discard, Quiet: true,
			Vary: sim.DefaultVary(), Capacity: sim.Capacity{Slots: 2}, CallLog: path, Ready: func(a string) { ready <- a }})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	for _, caller := range []string{"baseline", "short", "baseline"} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions",
			strings.NewReader(`{"model":"large","messages":[{"role":"user","content":"Where is my parcel?"}]}`))
		req.Header.Set(simserver.HeaderCaller, caller)
		req.Header.Set(openai.HeaderRequestID, "t1")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("status %d", res.StatusCode)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var callers []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c sim.Call
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if c.Model != "large" || c.TaskID != "t1" || c.TokensIn == 0 || c.TokensOut == 0 || c.At.IsZero() {
			t.Errorf("call %+v; want model large, task t1, tokens and an arrival time", c)
		}
		callers = append(callers, c.Caller)
	}
	if strings.Join(callers, ",") != "baseline,short,baseline" {
		t.Errorf("callers %v; want baseline, short, baseline", callers)
	}
}
