package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crab-testbed/crab/model"
)

// NoSleep reports the durations a time-scale-1 call reports, and sleeps
// nothing.
func TestNoSleep(t *testing.T) {
	t.Parallel()
	for _, kind := range []Config{Small(), Large()} {
		nominal := kind
		nominal.TimeScale = 1
		mn, err := New(nominal)
		if err != nil {
			t.Fatal(err)
		}
		mn.sleep = func(context.Context, time.Duration) error { return nil }
		fast := kind
		fast.TimeScale = 0.1
		fast.NoSleep = true
		mf, err := New(fast)
		if err != nil {
			t.Fatal(err)
		}
		mf.sleep = func(context.Context, time.Duration) error {
			t.Errorf("%s: NoSleep slept", kind.Kind)
			return nil
		}
		for _, text := range []string{ticketEasy, ticketLate, ticketGerman} {
			a := mustComplete(t, mn, req(text, testScope))
			b := mustComplete(t, mf, req(text, testScope))
			if a.Trace.ModelDur != b.Trace.ModelDur || a.Trace.TTFT != b.Trace.TTFT || a.Trace.ModelDur == 0 {
				t.Errorf("%s: NoSleep model time %v ttft %v; want the nominal %v %v", kind.Kind, b.Trace.ModelDur, b.Trace.TTFT, a.Trace.ModelDur, a.Trace.TTFT)
			}
		}
	}
}

func TestConfidence(t *testing.T) {
	t.Parallel()
	cs, cl := Small(), Large()
	cs.TimeScale, cl.TimeScale = 0, 0
	small, _ := New(cs)
	large, _ := New(cl)
	de := testScope
	de.Lang = "de"
	long := "Invoice 2291 charges us twice for the same licence and we would like to have the duplicate removed. " + strings.Repeat("We have been customers for many years and everything went well. ", 6)
	for _, tc := range []struct {
		name       string
		text       string
		scope      model.Scope
		smallConf  float64
		largeAbove float64
	}{
		{"easy", ticketEasy, testScope, 0.95, 0.9},
		{"no keyword in the window", ticketLate, testScope, 0.39, 0.9},
		{"negation", ticketNegated, testScope, 0.4, 0.9},
		{"German", ticketGerman, de, 0.23, 0.9},
		{"long, read in part", long, testScope, 0.64, 0.9},
	} {
		s := mustComplete(t, small, req(tc.text, tc.scope))
		l := mustComplete(t, large, req(tc.text, tc.scope))
		if s.Confidence != tc.smallConf {
			t.Errorf("%s: small confidence %v; want %v", tc.name, s.Confidence, tc.smallConf)
		}
		if l.Confidence <= tc.largeAbove || l.Confidence > 1 {
			t.Errorf("%s: large confidence %v; want above %v", tc.name, l.Confidence, tc.largeAbove)
		}
		if again := mustComplete(t, small, req(tc.text, tc.scope)); again.Confidence != s.Confidence {
			t.Errorf("%s: confidence %v then %v; want the same", tc.name, s.Confidence, again.Confidence)
		}
	}
}

// The small model's sense of "not English" agrees with the tasks' language
// labels on the embedded workload (it never reads them).
func TestLooksEnglishOnFixtures(t *testing.T) {
	t.Parallel()
	agree, n := 0, 0
	for _, ft := range loadFixtures(t) {
		window := ft.Text[:runeOffset(ft.Text, defaultSmallWindow)]
		en := strings.HasPrefix(ft.Lang, "en")
		n++
		if looksEnglish(window) == en {
			agree++
		}
	}
	if agree*100 < 95*n {
		t.Errorf("looksEnglish agrees with the language label on %d of %d tasks; want at least 95%%", agree, n)
	}
}
