package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/crab-testbed/crab/internal/jsonl"
	"github.com/crab-testbed/crab/internal/quantile"
)

// armRecord is what arms reads of one record.
type armRecord struct {
	Arm        string    `json:"arm"`
	Repeat     int       `json:"repeat"`
	Seq        int       `json:"seq"`
	Warmup     bool      `json:"warmup"`
	IntendedAt time.Time `json:"intended_at"`
	SentAt     time.Time `json:"sent_at"`
	LagMs      float64   `json:"lag_ms"`
}

// armFidelity is one arm's schedule fidelity.
type armFidelity struct {
	n        int
	rate     float64 // achieved: gaps inside stretches over their send span
	segments int
	lag      []float64
}

// arms summarises a multi-arm records.jsonl per arm: the achieved rate and
// the generator's lag, as each arm saw them. In switchback order an arm
// plays its schedule in stretches (blocks) separated by the other arms'
// turns, so its rate is measured inside the stretches: the gaps between
// consecutive scheduled requests of one stretch over the stretches' send
// spans. A stretch ends where the intended gap to the arm's next request is
// more than 3 times the arm's median intended gap (another arm played in
// between). The rule suits the
// constant arrival pattern the bench script uses. In sequential order every
// arm is one stretch.
func arms(args []string) error {
	fs := flag.NewFlagSet("arms", flag.ExitOnError)
	label := fs.String("label", "crab", "row label prefix")
	target := fs.Float64("target", 0, "target rate per second")
	_ = fs.Parse(args)
	if fs.NArg() != 1 {
		return errors.New("arms: want one records.jsonl")
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	by := map[string][]armRecord{}
	var order []string
	sc := jsonl.NewScanner(f, false)
	for sc.Scan() {
		var r armRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("%s:%d: %w", fs.Arg(0), sc.Line(), err)
		}
		if r.Warmup || r.SentAt.IsZero() {
			continue
		}
		if _, ok := by[r.Arm]; !ok {
			order = append(order, r.Arm)
		}
		by[r.Arm] = append(by[r.Arm], r)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", fs.Arg(0), sc.Line()+1, err)
	}
	fmt.Println("arm                    target/s  sent    achieved/s  rate err  stretches  lag p50  lag p99  lag max")
	for _, arm := range order {
		fi, err := fidelity(by[arm])
		if err != nil {
			return fmt.Errorf("%s: arm %s: %w", fs.Arg(0), arm, err)
		}
		rerr := "-"
		if *target > 0 {
			rerr = fmt.Sprintf("%+.2f%%", 100*(fi.rate-*target)/(*target))
		}
		n := len(fi.lag)
		fmt.Printf("%-22s %8.0f  %6d  %10.1f  %8s  %9d  %7.3f  %7.3f  %7.3f\n", *label+" "+arm, *target, fi.n, fi.rate, rerr, fi.segments,
			quantile.NearestRank(fi.lag, 50), quantile.NearestRank(fi.lag, 99), fi.lag[n-1])
	}
	return nil
}

func fidelity(recs []armRecord) (armFidelity, error) {
	slices.SortFunc(recs, func(a, b armRecord) int {
		if a.Repeat != b.Repeat {
			return a.Repeat - b.Repeat
		}
		return a.Seq - b.Seq
	})
	if len(recs) < 3 {
		return armFidelity{}, fmt.Errorf("%d records; want at least 3", len(recs))
	}
	gaps := make([]float64, 0, len(recs)-1)
	for i := 1; i < len(recs); i++ {
		gaps = append(gaps, recs[i].IntendedAt.Sub(recs[i-1].IntendedAt).Seconds())
	}
	sorted := slices.Clone(gaps)
	slices.Sort(sorted)
	median := quantile.NearestRank(sorted, 50)
	fi := armFidelity{n: len(recs), segments: 1}
	pairs, span := 0, 0.0
	for i, g := range gaps {
		if recs[i].Repeat != recs[i+1].Repeat || g > 3*median {
			fi.segments++
			continue
		}
		pairs++
		span += recs[i+1].SentAt.Sub(recs[i].SentAt).Seconds()
	}
	if span <= 0 {
		return armFidelity{}, errors.New("no send span inside stretches")
	}
	fi.rate = float64(pairs) / span
	for _, r := range recs {
		fi.lag = append(fi.lag, r.LagMs)
	}
	slices.Sort(fi.lag)
	return fi, nil
}
