//go:build linux

package eval

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/stack"
)

// The lag harness compares the generator's wait modes within one run, on
// the machine as it is: each variant plays a constant-rate pass against an
// HTTP server in a separate process while CPU burners compete for the same
// cores, and prints the schedule lag and queue percentiles and the CPU the
// runner used per request. It is not a pass/fail test (figures depend on
// the machine); it runs only with CRAB_LAG_HARNESS set:
//
//	CRAB_LAG_HARNESS=1 go test ./eval -run TestGeneratorLagHarness -v
//
// CRAB_LAG_RATES (default "1000 5000"), CRAB_LAG_SECONDS (2),
// CRAB_LAG_BURN (external burner processes, 1), CRAB_LAG_CONC (4096),
// CRAB_LAG_ROUNDS (2: variants are interleaved, round after round).
func TestGeneratorLagHarness(t *testing.T) {
	if os.Getenv("CRAB_LAG_HARNESS") == "" {
		t.Skip("set CRAB_LAG_HARNESS=1 to run the generator lag harness")
	}
	rates := strings.Fields(envOr("CRAB_LAG_RATES", "1000 5000"))
	secs := envInt("CRAB_LAG_SECONDS", 2)
	burn := envInt("CRAB_LAG_BURN", 1)
	conc := envInt("CRAB_LAG_CONC", 4096)
	rounds := envInt("CRAB_LAG_ROUNDS", 2)

	url := startHelperServer(t)
	for range burn {
		b := exec.Command("/bin/sh", "-c", "while :; do :; done")
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Process.Kill(); b.Wait() })
	}
	tr := &http.Transport{MaxIdleConns: conc, MaxIdleConnsPerHost: conc, IdleConnTimeout: time.Minute}
	client := &http.Client{Transport: tr}
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"ticket"}]}`)
	backend := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(hr)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		return &model.Response{Content: string(b), Scope: req.Scope, Trace: model.Trace{Validated: true, ContractOK: true}}, nil
	})
	// Each variant is MODE/WORKERS[/rt]: MODE a wait mode, WORKERS lazy or
	// eager, rt for a real-time generator thread.
	variants := strings.Fields(envOr("CRAB_LAG_VARIANTS", "yield/eager yield/lazy thread/eager thread/lazy thread/lazy/rt"))
	var osWait string
	threadHook := func() {
		b, _ := os.ReadFile("/proc/thread-self/schedstat")
		if f := strings.Fields(string(b)); len(f) == 3 {
			w, _ := strconv.ParseFloat(f[1], 64)
			osWait = fmt.Sprintf("os-wait %.1f ms over %s slices", w/1e6, f[2])
		}
		if b, err := os.ReadFile("/proc/thread-self/sched"); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "policy") || strings.HasPrefix(l, "nr_involuntary") {
					osWait += "; " + strings.Join(strings.Fields(l), " ")
				}
			}
		}
	}
	fmt.Printf("%-22s %6s %5s  %8s %8s %8s  %8s %8s  %9s  %s\n", "variant", "rate", "round", "lag p50", "lag p99", "lag max", "q p50", "q p99", "cpu us/rq", "late>1ms")
	for _, rs := range rates {
		rate, _ := strconv.Atoi(rs)
		n := rate * secs
		tasks := fakeTasks(n)
		for round := range rounds {
			for _, name := range variants {
				f := strings.Split(name, "/")
				gen := generatorOptions{wait: -1, threadHook: threadHook}
				for _, m := range waitModes {
					if m.String() == f[0] {
						gen.wait = m
					}
				}
				if gen.wait < 0 || len(f) < 2 {
					t.Fatalf("variant %q: want MODE/lazy|eager[/rt]", name)
				}
				gen.eagerWorkers = f[1] != "lazy"
				gen.noRealtime = len(f) < 3 || f[2] != "rt"
				osWait = ""
				exp := testExperiment(stack.ArmSpec{Name: "a", Model: "m", Mode: "full"})
				exp.Arrival = Arrival{Pattern: "constant", Rate: float64(rate)}
				exp.Concurrency = conc
				exp.Timeout = stack.Duration(10 * time.Second)
				var lags, queues []float64
				r := &Runner{Exp: exp, Tasks: tasks, gen: gen,
					Build: func(spec stack.ArmSpec, _ int) (*ArmStack, func(), error) {
						return &ArmStack{Spec: spec, Stack: backend}, nil, nil
					},
					Emit: func(rec records.Record) error {
						lags = append(lags, rec.LagMs)
						queues = append(queues, rec.QueueMs)
						return nil
					}}
				cpu0 := cpuTime()
				if _, err := r.Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				cpu := cpuTime() - cpu0
				slices.Sort(lags)
				slices.Sort(queues)
				late := 0
				for _, l := range lags {
					if l > 1 {
						late++
					}
				}
				fmt.Printf("%-22s %6d %5d  %8.3f %8.3f %8.3f  %8.3f %8.3f  %9.0f  %-5d %s\n", name, rate, round,
					pct(lags, 0.50), pct(lags, 0.99), lags[len(lags)-1], pct(queues, 0.50), pct(queues, 0.99),
					float64(cpu.Microseconds())/float64(n), late, osWait)
				tr.CloseIdleConnections()
			}
		}
	}
}

// TestLagHelperServer is the harness's server process; it does nothing in
// an ordinary test run.
func TestLagHelperServer(t *testing.T) {
	addrFile := os.Getenv("CRAB_LAG_SERVER_ADDR_FILE")
	if addrFile == "" {
		t.Skip("helper process of the lag harness")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(addrFile, []byte(ln.Addr().String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out := []byte(answer("billing"))
	go func() {
		// The harness kills the helper when it ends; this bounds a stray one.
		time.Sleep(10 * time.Minute)
		os.Exit(0)
	}()
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	}))
}

func startHelperServer(t *testing.T) string {
	t.Helper()
	addrFile := t.TempDir() + "/addr"
	cmd := exec.Command(os.Args[0], "-test.run=^TestLagHelperServer$")
	cmd.Env = append(os.Environ(), "CRAB_LAG_SERVER_ADDR_FILE="+addrFile, "CRAB_LAG_HARNESS=")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for range 100 {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			return "http://" + string(b) + "/v1/chat/completions"
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("lag harness server did not start")
	return ""
}

func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return def
}
