// Command vary runs crab end to end, many times, against a live
// OpenAI-compatible double whose answers vary from call to call (10% of
// tasks flip with probability 0.5 on each call; internal/varydouble), and
// counts the verdicts: how often the identical twin (control: twin) is
// accepted, rejected or flags the run, the equal-quality faster candidate
// is accepted or rejected, and the candidate 6 points worse is accepted or
// rejected, each with an exact 95% interval.
//
//	go build -o /tmp/crab . && go run ./bench/vary -crab /tmp/crab -runs 20
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"text/tabwriter"

	"github.com/crab-testbed/crab/internal/binom"
	"github.com/crab-testbed/crab/internal/varydouble"
)

type summary struct {
	Arms []struct {
		Name    string `json:"name"`
		Verdict string `json:"verdict"`
	} `json:"arms"`
	Decision struct {
		Miscalibrated string `json:"miscalibrated"`
	} `json:"decision"`
}

func main() {
	crab := flag.String("crab", "crab", "the crab binary")
	runs := flag.Int("runs", 20, "runs, each with its own seed")
	tasks := flag.Int("tasks", 400, "tasks per run")
	repeats := flag.Int("repeats", 3, "repeats per task")
	seed := flag.Int64("seed", 1, "first seed")
	flag.Parse()
	work, err := os.MkdirTemp("", "crab-vary-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(work)
	os.WriteFile(filepath.Join(work, "tasks.jsonl"), []byte(varydouble.Tasks(*tasks)), 0o644)
	os.WriteFile(filepath.Join(work, "answer.schema.json"), []byte(varydouble.Contract), 0o644)
	counts := map[string]map[string]int{}
	flagged := 0
	for i := range *runs {
		s := *seed + int64(i)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fail(err)
		}
		srv := &http.Server{Handler: varydouble.New(varydouble.Standard(s))}
		go srv.Serve(ln)
		exp := filepath.Join(work, "exp.yaml")
		os.WriteFile(exp, []byte(varydouble.Experiment("http://"+ln.Addr().String()+"/v1", s, *repeats)), 0o644)
		out := filepath.Join(work, fmt.Sprintf("run-%d", i))
		cmd := exec.Command(*crab, "run", "-e", exp, "-o", out, "-q")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				fail(fmt.Errorf("seed %d: crab run: %v", s, err))
			}
		}
		srv.Close()
		var sum summary
		b, err := os.ReadFile(filepath.Join(out, "summary.json"))
		if err == nil {
			err = json.Unmarshal(b, &sum)
		}
		if err != nil {
			fail(err)
		}
		line := fmt.Sprintf("seed %d:", s)
		for _, a := range sum.Arms {
			if counts[a.Name] == nil {
				counts[a.Name] = map[string]int{}
			}
			counts[a.Name][a.Verdict]++
			line += " " + a.Name + " " + a.Verdict
		}
		if sum.Decision.Miscalibrated != "" {
			flagged++
			line += "; flagged: " + sum.Decision.Miscalibrated
		}
		fmt.Fprintln(os.Stderr, line)
		os.RemoveAll(out)
	}
	fmt.Printf("== %d runs of %d tasks × %d repeats against a double where 10%% of tasks flip with probability 0.5 per call\n", *runs, *tasks, *repeats)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "arm\taccept\taccept_95%\treject\treject_95%\tno_gain\tinconclusive")
	for _, arm := range []string{"twin", "faster", "worse"} {
		c := counts[arm]
		alo, ahi := binom.Interval(c["accept"], *runs, 0.95)
		rlo, rhi := binom.Interval(c["reject"], *runs, 0.95)
		fmt.Fprintf(tw, "%s\t%d/%d\t[%.3f, %.3f]\t%d/%d\t[%.3f, %.3f]\t%d\t%d\n", arm, c["accept"], *runs, alo, ahi, c["reject"], *runs, rlo, rhi, c["no_gain"], c["inconclusive"])
	}
	tw.Flush()
	flo, fhi := binom.Interval(flagged, *runs, 0.95)
	fmt.Printf("runs flagged miscalibrated by the twin: %d/%d [%.3f, %.3f]\n", flagged, *runs, flo, fhi)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "vary:", err)
	os.Exit(1)
}
