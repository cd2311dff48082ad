// Command benchtool prepares inputs for crab's benchmark scripts and
// summarises their outputs: it writes replicated task files and vegeta
// target files from the embedded workload, and reduces crab's records.jsonl
// and vegeta's JSON report to the same columns (achieved rate, schedule lag,
// latency percentiles by nearest rank), so the two tools can be printed side
// by side. It is used by bench/run.sh and is not part of crab itself.
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	evalrecords "github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/jsonl"
	"github.com/crab-testbed/crab/internal/quantile"

	"github.com/crab-testbed/crab/fixtures"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "tasks":
		err = tasks(os.Args[2:])
	case "targets":
		err = targets(os.Args[2:])
	case "records":
		err = records(os.Args[2:])
	case "arms":
		err = arms(os.Args[2:])
	case "vegeta":
		err = vegeta(os.Args[2:])
	case "added":
		err = added(os.Args[2:])
	case "gen":
		err = gen(os.Args[2:])
	case "header":
		fmt.Println(header)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage: benchtool tasks -n N
       benchtool targets -url URL -n N [-key KEY] [-model NAME] [-distinct [-start N]]
       benchtool records [-label L] [-target RATE] RECORDS.jsonl
       benchtool arms [-label L] [-target RATE] RECORDS.jsonl
       benchtool vegeta [-label L] [-target RATE] REPORT.json [SLICE.json ...]
       benchtool added DIRECT.json OTHER.json ...
       benchtool gen -n N -o DIR [-tasks T] [-shards K] [-output BYTES]
       benchtool header`)
	os.Exit(2)
}

// task is one line of the embedded tasks.jsonl, kept as raw fields so a
// copy is written back with nothing but its id changed.
type task map[string]json.RawMessage

func (t task) str(k string) string {
	var s string
	_ = json.Unmarshal(t[k], &s)
	return s
}

func loadTasks() ([]task, error) {
	f, err := fixtures.FS.Open("tasks.jsonl")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []task
	sc := jsonl.NewScanner(f, false)
	for sc.Scan() {
		var t task
		if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, sc.Err()
}

// tasks writes N tasks to stdout: the embedded workload repeated, copy c of
// task ID renamed ID-c, so one pass of an experiment runs N requests.
func tasks(args []string) error {
	fs := flag.NewFlagSet("tasks", flag.ExitOnError)
	n := fs.Int("n", 480, "number of tasks to write")
	_ = fs.Parse(args)
	all, err := loadTasks()
	if err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	for i := 0; i < *n; i++ {
		t := maps(all[i%len(all)])
		id, _ := json.Marshal(fmt.Sprintf("%s-%d", all[i%len(all)].str("id"), i/len(all)))
		t["id"] = id
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		w.Write(b)
		w.WriteByte('\n')
	}
	return w.Flush()
}

func maps(t task) task {
	c := make(task, len(t))
	for k, v := range t {
		c[k] = v
	}
	return c
}

// vegetaTarget is one line of a vegeta -format=json targets file.
type vegetaTarget struct {
	Method string              `json:"method"`
	URL    string              `json:"url"`
	Body   string              `json:"body"` // base64
	Header map[string][]string `json:"header"`
}

// targets writes N vegeta targets: a non-streamed chat completion per task
// of the embedded workload, shaped as crab's openai backend sends it (user
// message, contract as response_format, explicit temperature, seed, user,
// and the X-Crab-* scope headers). With -distinct every body is different
// (the ticket text carries a sequence number), so a cache in front never
// hits; without it every target is the first task's, so a cache always hits
// after the first request.
func targets(args []string) error {
	fs := flag.NewFlagSet("targets", flag.ExitOnError)
	url := fs.String("url", "", "chat completions URL")
	n := fs.Int("n", 480, "number of targets")
	key := fs.String("key", "", "API key sent as Authorization: Bearer")
	modelName := fs.String("model", "large", "model field of the body")
	distinct := fs.Bool("distinct", false, "make every body distinct")
	start := fs.Int("start", 0, "first sequence number of -distinct bodies")
	_ = fs.Parse(args)
	if *url == "" {
		return errors.New("targets: -url is required")
	}
	all, err := loadTasks()
	if err != nil {
		return err
	}
	schema, err := fixtures.FS.ReadFile("triage.schema.json")
	if err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(w)
	for i := 0; i < *n; i++ {
		t := all[0]
		text := t.str("text")
		if *distinct {
			t = all[(*start+i)%len(all)]
			text = t.str("text") + " #" + strconv.Itoa(*start+i)
		}
		body, err := json.Marshal(map[string]any{
			"model":       *modelName,
			"messages":    []map[string]string{{"role": "user", "content": text}},
			"temperature": math.SmallestNonzeroFloat32,
			"seed":        42,
			"user":        t.str("user"),
			"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{
				"name": "crab_contract", "strict": true, "schema": json.RawMessage(schema)}},
		})
		if err != nil {
			return err
		}
		h := map[string][]string{"Content-Type": {"application/json"}}
		for hk, tk := range map[string]string{"X-Crab-Tenant": "tenant", "X-Crab-Permission": "permission",
			"X-Crab-Lang": "lang", "X-Crab-Doc-Version": "doc_version", "X-Crab-Request-Id": "id"} {
			if v := t.str(tk); v != "" {
				h[hk] = []string{v}
			}
		}
		if *key != "" {
			h["Authorization"] = []string{"Bearer " + *key}
		}
		if err := enc.Encode(vegetaTarget{Method: "POST", URL: *url, Body: base64.StdEncoding.EncodeToString(body), Header: h}); err != nil {
			return err
		}
	}
	return w.Flush()
}

const header = "tool       target/s  sent    achieved/s  rate err  ok%     lag p50  lag p99  lag max  |  p50 ms  p90 ms  p99 ms  max ms  mean ms"

// row prints one summary line; lag columns are "-" when the tool does not
// report them.
func row(label string, target float64, n int, rate float64, okFrac float64, lag []float64, lat []float64, mean float64) {
	rerr := "-"
	if target > 0 {
		rerr = fmt.Sprintf("%+.2f%%", 100*(rate-target)/target)
	}
	lags := "-        -        -      "
	if lag != nil {
		lags = fmt.Sprintf("%-8.3f %-8.3f %-7.3f", lag[0], lag[1], lag[2])
	}
	fmt.Printf("%-10s %-9.0f %-7d %-11.1f %-9s %-7.2f %s  |  %-7.3f %-7.3f %-7.3f %-7.3f %.3f\n",
		label, target, n, rate, rerr, 100*okFrac, lags, lat[0], lat[1], lat[2], lat[3], mean)
}

// records summarises a crab records.jsonl: achieved rate = (n-1) / span of
// sent_at, schedule lag (lag_ms) and end-to-end latency (e2e_ms, measured
// from the intended send time) by nearest rank, over all requests. Its
// second row times the same requests from their send, and in its lag
// columns puts the hand-off: from the generator's release to the send
// (sent_at - intended_at - lag_ms), the part of e2e_ms that is crab's
// own beyond the lag.
func records(args []string) error {
	fs := flag.NewFlagSet("records", flag.ExitOnError)
	label := fs.String("label", "crab", "row label")
	target := fs.Float64("target", 0, "target rate per second")
	_ = fs.Parse(args)
	if fs.NArg() != 1 {
		return errors.New("records: want one records.jsonl")
	}
	var lag, e2e, fromSend, handoff []float64
	var first, last time.Time
	ok := 0
	torn, err := evalrecords.ReadEach([]string{fs.Arg(0)}, nil, func(r *evalrecords.Record) error {
		if first.IsZero() || r.SentAt.Before(first) {
			first = r.SentAt
		}
		if r.SentAt.After(last) {
			last = r.SentAt
		}
		lag = append(lag, r.LagMs)
		e2e = append(e2e, r.E2EMs)
		fromSend = append(fromSend, float64(r.DoneAt.Sub(r.SentAt))/1e6)
		handoff = append(handoff, float64(r.SentAt.Sub(r.IntendedAt))/1e6-r.LagMs)
		if r.Outcome == evalrecords.OutcomeOK {
			ok++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(torn) > 0 {
		return torn[0]
	}
	n := len(e2e)
	if n < 2 {
		return fmt.Errorf("%s: %d records; want at least 2", fs.Arg(0), n)
	}
	slices.Sort(lag)
	slices.Sort(e2e)
	sum := 0.0
	for _, x := range e2e {
		sum += x
	}
	rate := float64(n-1) / last.Sub(first).Seconds()
	row(*label, *target, n, rate, float64(ok)/float64(n),
		[]float64{quantile.NearestRank(lag, 50), quantile.NearestRank(lag, 99), lag[n-1]},
		[]float64{quantile.NearestRank(e2e, 50), quantile.NearestRank(e2e, 90), quantile.NearestRank(e2e, 99), e2e[n-1]}, sum/float64(n))
	// The same requests timed from the actual send (sent_at to done_at), as
	// vegeta times its own: without the generator's lag.
	slices.Sort(fromSend)
	slices.Sort(handoff)
	sum = 0
	for _, x := range fromSend {
		sum += x
	}
	row(*label+"@send", *target, n, rate, float64(ok)/float64(n),
		[]float64{quantile.NearestRank(handoff, 50), quantile.NearestRank(handoff, 99), handoff[n-1]},
		[]float64{quantile.NearestRank(fromSend, 50), quantile.NearestRank(fromSend, 90), quantile.NearestRank(fromSend, 99), fromSend[n-1]}, sum/float64(n))
	return nil
}

// vegeta summarises `vegeta report -type=json`: its rate is requests over
// the attack's own span, latencies in nanoseconds (vegeta's percentiles are
// estimated by a t-digest; max and mean are exact).
func vegeta(args []string) error {
	fs := flag.NewFlagSet("vegeta", flag.ExitOnError)
	label := fs.String("label", "vegeta", "row label")
	target := fs.Float64("target", 0, "target rate per second")
	_ = fs.Parse(args)
	if fs.NArg() < 1 {
		return errors.New("vegeta: want REPORT.json [SLICE.json ...]")
	}
	b, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	var r struct {
		Latencies struct {
			Mean float64 `json:"mean"`
			P50  float64 `json:"50th"`
			P90  float64 `json:"90th"`
			P99  float64 `json:"99th"`
			Max  float64 `json:"max"`
		} `json:"latencies"`
		Requests    int            `json:"requests"`
		Rate        float64        `json:"rate"`
		Success     float64        `json:"success"`
		StatusCodes map[string]int `json:"status_codes"`
		Errors      []string       `json:"errors"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	// A report merged from several attacks spans the gaps between them, so
	// its rate is taken from the per-attack reports when they are given:
	// all requests over the sum of the attacks' own spans.
	if fs.NArg() > 1 {
		var reqs, secs float64
		for _, p := range fs.Args()[1:] {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			var sl struct {
				Requests int     `json:"requests"`
				Rate     float64 `json:"rate"`
			}
			if err := json.Unmarshal(b, &sl); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			reqs += float64(sl.Requests)
			if sl.Rate > 0 {
				secs += float64(sl.Requests) / sl.Rate
			}
		}
		r.Rate = reqs / secs
	}
	ms := func(ns float64) float64 { return ns / 1e6 }
	l := r.Latencies
	row(*label, *target, r.Requests, r.Rate, r.Success, nil,
		[]float64{ms(l.P50), ms(l.P90), ms(l.P99), ms(l.Max)}, ms(l.Mean))
	if len(r.Errors) > 0 {
		fmt.Printf("         vegeta errors: %v\n", r.Errors[:min(3, len(r.Errors))])
	}
	return nil
}

// vegetaLatencies reads the latency block of a vegeta JSON report, in ms.
func vegetaLatencies(path string) (p50, p99 float64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	var r struct {
		Latencies struct {
			P50 float64 `json:"50th"`
			P99 float64 `json:"99th"`
		} `json:"latencies"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	return r.Latencies.P50 / 1e6, r.Latencies.P99 / 1e6, nil
}

// added prints, for each vegeta report after the first, the latency it adds
// over the first (direct) at p50 and p99, and its p50 addition as a multiple
// of the second report's (nginx).
func added(args []string) error {
	if len(args) < 2 {
		return errors.New("added: want DIRECT.json and at least one other report")
	}
	d50, d99, err := vegetaLatencies(args[0])
	if err != nil {
		return err
	}
	fmt.Printf("%-10s %-12s %-12s %s\n", "path", "p50 added", "p99 added", "p50 added / nginx's")
	var ref float64
	for i, p := range args[1:] {
		p50, p99, err := vegetaLatencies(p)
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(filepath.Base(p), ".report.json")
		a50 := p50 - d50
		if i == 0 {
			ref = a50
		}
		fmt.Printf("%-10s %-+12.3f %-+12.3f %.2fx\n", name, a50, p99-d99, a50/ref)
	}
	return nil
}
