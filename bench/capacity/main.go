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
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/capacity"
	"github.com/crab-testbed/crab/fixtures"
)

func main() {
	exp := flag.String("c", "", "experiment file with a sweep section")
	seeds := flag.String("seeds", "1", "comma-separated seeds, one sweep each")
	out := flag.String("o", "", "write each seed's sweep into DIR/seed-N")
	full := flag.Bool("v", false, "print each sweep's whole text and progress")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *exp, *seeds, *out, *full); err != nil {
		fmt.Fprintln(os.Stderr, "capacity:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, exp, seeds, out string, full bool) error {
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
		cfg, err := capacity.LoadConfig(s)
		if err != nil {
			return err
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

func num(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 2, 64)
}
