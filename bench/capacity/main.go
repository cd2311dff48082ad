// Command capacity plays the rate sweep of an experiment file once per
// seed and prints, per arm, the knee with its 95% interval beside the knee
// the simulated models' parameters imply, and each candidate's capacity
// ratio and verdict: the figures of docs/capacity.md. bench/capacity.sh
// runs it on the experiments beside it.
//
//	go run ./bench/capacity -c bench/capacity/sim.yaml -seeds 1,2,3
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/capacity"
	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/model/simserver"
	"github.com/crab-testbed/crab/stack"
)

func main() {
	exp := flag.String("c", "", "experiment file with a sweep section")
	seeds := flag.String("seeds", "1", "comma-separated seeds, one sweep each")
	out := flag.String("o", "", "write each seed's sweep into DIR/seed-N")
	full := flag.Bool("v", false, "print each sweep's whole text and progress")
	scale := flag.Float64("time-scale", 0, "replace the experiment's time_scale (and scale its timeout alike); 0 keeps it")
	requests := flag.Int("requests", 0, "replace the sweep's requests per rung; 0 keeps it")
	refine := flag.Int("refine", -1, "replace the sweep's refine; -1 keeps it")
	overHTTP := flag.Bool("http", false, "serve the experiment's simulated models over HTTP, as crab sim-server does, and sweep them there")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *exp, *seeds, *out, *full, *overHTTP, *scale, *requests, *refine); err != nil {
		fmt.Fprintln(os.Stderr, "capacity:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, exp, seeds, out string, full, overHTTP bool, scale float64, requests, refine int) error {
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "seed\tarm\tknee/s\t95% interval\timplied/s\tknee/implied\tratio [95%]\tverdict\twall s")
	for _, f := range strings.Split(seeds, ",") {
		seed, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return fmt.Errorf("seed %q: %v", f, err)
		}
		s, err := eval.LoadSetup(exp, fixtures.FS)
		if err != nil {
			return err
		}
		s.Exp.Seed = seed
		if scale > 0 {
			// The timeout is wall time: it keeps its length in the models' time.
			s.Exp.Timeout = stack.Duration(float64(s.Exp.Timeout) * scale / *s.Exp.TimeScale)
			s.Exp.TimeScale = &scale
		}
		cfg, err := capacity.LoadConfig(s)
		if err != nil {
			return err
		}
		if requests > 0 {
			cfg.Requests = min(requests, len(s.Tasks))
		}
		if refine >= 0 {
			cfg.Refine = &refine
		}
		if overHTTP {
			stop, err := serveOverHTTP(s)
			if err != nil {
				return err
			}
			defer stop()
		}
		var prog io.Writer
		if full {
			prog = os.Stderr
		}
		res, err := capacity.Sweep(ctx, s, cfg, prog)
		if err != nil {
			return err
		}
		if full {
			if err := res.WriteText(os.Stdout); err != nil {
				return err
			}
		}
		if out != "" {
			if err := res.WriteDir(filepath.Join(out, fmt.Sprintf("seed-%d", seed))); err != nil {
				return err
			}
		}
		for i, a := range res.Arms {
			ratio, verdict := "", "baseline"
			if i > 0 {
				v := res.Candidates[i-1]
				ratio = fmt.Sprintf("%s [%s, %s]", num(v.Ratio), num(v.RatioLo), num(v.RatioHi))
				verdict = v.Verdict
			}
			off := "-"
			if a.Knee != nil && a.ImpliedKnee != nil {
				off = fmt.Sprintf("%+.1f%%", (*a.Knee / *a.ImpliedKnee - 1)*100)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t[%s, %s]\t%s\t%s\t%s\t%s\t%.1f\n", seed, a.Name, num(a.Knee), num(a.KneeLo), num(a.KneeHi), num(a.ImpliedKnee), off, ratio, verdict, res.WallS)
		}
	}
	return tw.Flush()
}

// serveOverHTTP serves the experiment's simulated models from an
// OpenAI-compatible server on loopback (crab sim-server's handler, the
// models built as the experiment builds them) and points the experiment's
// models at it.
func serveOverHTTP(s *eval.Setup) (func(), error) {
	var sims []stack.ModelSpec
	for _, m := range s.Exp.Models {
		if m.Backend == "" || m.Backend == stack.BackendSim {
			sims = append(sims, m)
		}
	}
	expected := eval.ExpectedByID(s.Tasks)
	b, err := stack.Backends(sims, stack.BackendOptions{Seed: s.Exp.Seed, TimeScale: *s.Exp.TimeScale,
		Oracle: func(id string) map[string]any { return expected[id] }})
	if err != nil {
		return nil, err
	}
	var models []*sim.Model
	for _, m := range sims {
		models = append(models, b[m.Name].(*sim.Model))
	}
	h, err := simserver.New(simserver.Config{Models: models, Seed: s.Exp.Seed})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	for i, m := range s.Exp.Models {
		if m.Backend == "" || m.Backend == stack.BackendSim {
			// The simulated model's prices, 0 where not declared, stay
			// declared: the server is the same simulated world.
			in, out := m.PriceInPerMTok, m.PriceOutPerMTok
			if in == nil && out == nil {
				in = new(float64)
			}
			s.Exp.Models[i] = stack.ModelSpec{Name: m.Name, Backend: stack.BackendOpenAI, BaseURL: "http://" + ln.Addr().String() + "/v1",
				PriceInPerMTok: in, PriceOutPerMTok: out}
		}
	}
	return func() { srv.Close() }, nil
}

func num(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 2, 64)
}
