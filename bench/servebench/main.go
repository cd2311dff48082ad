// Command servebench measures what crab serve promises its records and
// its keyed clients, against a crab serve process it is pointed at:
//
//	servebench kill -crab BIN -keys FILE -dir DIR [-rounds 5]
//	    starts crab serve with records in DIR, sends traffic, kills it
//	    with SIGKILL mid-traffic, and counts the requests answered with
//	    200 whose record is not in DIR; ROUNDS times on the same DIR.
//	servebench flood -mode idle|redial -addr HOST:PORT [-key KEY] [-sources N] [-conns N]
//	    holds a flood until killed: idle keeps CONNS keep-alive
//	    connections of one valid key open from 64 loopback addresses
//	    (127.0.2.1, ...), dialling again a second after
//	    the server closes one; redial holds one silent connection from each of N
//	    loopback addresses (127.0.1.1, ...), dialled again the instant
//	    the server closes it.
//	servebench client -addr HOST:PORT -key KEY [-rate 50] [-seconds 10]
//	    a keyed client from 127.0.0.2 sending one cached request at RATE
//	    per second, every second one on a new connection; prints its
//	    error count and latency percentiles.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crab-testbed/crab/internal/quantile"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: servebench kill|flood|client [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "kill":
		err = kill(os.Args[2:])
	case "flood":
		err = flood(os.Args[2:])
	case "client":
		err = client(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (want kill, flood or client)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "servebench:", err)
		os.Exit(1)
	}
}

const chat = `{"model":"auto","messages":[{"role":"user","content":"My invoice %s was charged twice this month, please refund one."}]}`

func kill(args []string) error {
	fs := flag.NewFlagSet("kill", flag.ExitOnError)
	crab := fs.String("crab", "crab", "crab binary")
	keys := fs.String("keys", "", "keys file")
	key := fs.String("key", "sk-crab-acme-agent", "API key")
	dir := fs.String("dir", "", "records directory")
	rounds := fs.Int("rounds", 5, "kills")
	workers := fs.Int("workers", 64, "concurrent requests")
	arm := fs.String("arm", "baseline", "arm of the embedded experiment to deploy")
	fs.Parse(args)
	if *dir == "" || *keys == "" {
		return errors.New("kill: -dir and -keys are required")
	}
	fmt.Printf("round  answered  recorded  missing  killed_after_ms  missing_read_ms_before_kill\n")
	worst := 0
	for round := 1; round <= *rounds; round++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		addr := ln.Addr().String()
		ln.Close()
		cmd := exec.Command(*crab, "serve", "--arm", *arm, "--keys", *keys, "--records", *dir, "--listen", addr, "--quiet")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		if err := waitUp("http://" + addr + "/healthz"); err != nil {
			cmd.Process.Kill()
			return err
		}
		var mu sync.Mutex
		answered := map[string]time.Time{} // request id → when its answer was read
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		cl := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *workers}}
		for w := range *workers {
			wg.Go(func() {
				for n := 0; ctx.Err() == nil; n++ {
					id := fmt.Sprintf("r%d-w%d-%d", round, w, n)
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(fmt.Sprintf(chat, id)))
					req.Header.Set("Authorization", "Bearer "+*key)
					req.Header.Set("X-Crab-Request-Id", id)
					resp, err := cl.Do(req)
					if err != nil {
						continue
					}
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode == http.StatusOK {
						mu.Lock()
						answered[id] = time.Now()
						mu.Unlock()
					}
				}
			})
		}
		start := time.Now()
		time.Sleep(time.Duration(1000+round*317%1000) * time.Millisecond) // 1–2 s of traffic, a different moment each round
		killedAt := time.Now()
		cmd.Process.Kill() // SIGKILL
		cmd.Wait()
		cancel()
		wg.Wait()
		recorded, err := recordedIDs(*dir, fmt.Sprintf("r%d-", round))
		if err != nil {
			return err
		}
		var before []float64 // ms before the kill each missing answer was read (negative: after it)
		for id, at := range answered {
			if !recorded[id] {
				before = append(before, float64(killedAt.Sub(at))/float64(time.Millisecond))
			}
		}
		slices.Sort(before)
		span := "-"
		if len(before) > 0 {
			span = fmt.Sprintf("%.1f .. %.1f", before[0], before[len(before)-1])
		}
		worst = max(worst, len(before))
		fmt.Printf("%-5d  %-8d  %-8d  %-7d  %-15d  %s\n", round, len(answered), len(recorded), len(before), killedAt.Sub(start).Milliseconds(), span)
	}
	fmt.Printf("worst: %d answered request(s) missing from the records after a kill -9\n", worst)
	return nil
}

// recordedIDs reads the client request ids (after the "/" of the task id)
// of every record in dir's records files that start with prefix; a torn
// last line is skipped.
func recordedIDs(dir, prefix string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "records*.jsonl"))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(raw), "\n") {
			var rec struct {
				TaskID string `json:"task_id"`
			}
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			if _, id, ok := strings.Cut(rec.TaskID, "/"); ok && strings.HasPrefix(id, prefix) {
				out[id] = true
			}
		}
	}
	return out, nil
}

func waitUp(url string) error {
	for range 200 {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not come up within 10s", url)
}

func dialFrom(local, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	return d.Dial("tcp", addr)
}

func flood(args []string) error {
	fs := flag.NewFlagSet("flood", flag.ExitOnError)
	mode := fs.String("mode", "redial", "idle or redial")
	addr := fs.String("addr", "", "crab serve address")
	key := fs.String("key", "sk-crab-acme-agent", "the idle flood's API key")
	sources := fs.Int("sources", 250, "redial: loopback source addresses")
	conns := fs.Int("conns", 1024, "idle: connections held")
	fs.Parse(args)
	var dials atomic.Int64
	hold := func(local string, hello string) {
		buf := make([]byte, 4096)
		for {
			c, err := dialFrom(local, *addr)
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			dials.Add(1)
			if hello != "" {
				io.WriteString(c, hello)
			}
			for { // until the server closes it
				if _, err := c.Read(buf); err != nil {
					break
				}
			}
			c.Close()
			if hello != "" {
				time.Sleep(time.Second) // the idle flood holds connections; it does not hammer
			}
		}
	}
	switch *mode {
	case "idle":
		hello := "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + *key + "\r\n\r\n"
		for i := range *conns { // from 64 addresses, under the keyless share of one
			go hold(fmt.Sprintf("127.0.2.%d", 1+i%64), hello)
		}
	case "redial":
		for i := range *sources {
			go hold(fmt.Sprintf("127.0.%d.%d", 1+i/250, 1+i%250), "")
		}
	default:
		return fmt.Errorf("flood: -mode %q: want idle or redial", *mode)
	}
	for t := time.NewTicker(time.Second); ; <-t.C {
		fmt.Fprintf(os.Stderr, "flood %s: %d dials\n", *mode, dials.Load())
	}
}

func client(args []string) error {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	addr := fs.String("addr", "", "crab serve address")
	key := fs.String("key", "sk-crab-globex-admin", "API key")
	rate := fs.Int("rate", 50, "requests per second")
	seconds := fs.Int("seconds", 10, "duration")
	label := fs.String("label", "", "label of the output line")
	fs.Parse(args)
	mk := func(keepAlive bool) *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			DialContext:       func(ctx context.Context, _, a string) (net.Conn, error) { return dialFrom("127.0.0.2", a) },
			DisableKeepAlives: !keepAlive,
		}}
	}
	kept, fresh := mk(true), mk(false)
	body := fmt.Sprintf(chat, "bench-keyed")
	do := func(cl *http.Client) (float64, error) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+*addr+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+*key)
		start := time.Now()
		resp, err := cl.Do(req)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		return float64(time.Since(start)) / float64(time.Millisecond), err
	}
	if _, err := do(kept); err != nil { // warms the cache: every later request is a hit
		return fmt.Errorf("client: first request: %w", err)
	}
	var mu sync.Mutex
	var took []float64
	var errs, sent int
	var firstErr error
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(*rate))
	for end := time.Now().Add(time.Duration(*seconds) * time.Second); time.Now().Before(end); <-tick.C {
		cl := kept
		if sent%2 == 1 {
			cl = fresh
		}
		sent++
		wg.Go(func() {
			ms, err := do(cl)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs++
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			took = append(took, ms)
		})
	}
	wg.Wait()
	slices.Sort(took)
	q := func(p float64) float64 { return quantile.NearestRank(took, p) }
	fmt.Printf("%-8s sent %d  errors %d (%.2f%%)  p50 %.2f ms  p99 %.2f ms  max %.2f ms", *label, sent, errs, 100*float64(errs)/float64(sent), q(50), q(99), q(100))
	if firstErr != nil {
		fmt.Printf("  first error: %v", firstErr)
	}
	fmt.Println()
	return nil
}
