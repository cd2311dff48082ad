package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/crab-testbed/crab/model"
)

// fixtureTask mirrors the fields of eval.Task this test needs; decoding it
// here keeps the sim tests free of the eval package.
type fixtureTask struct {
	ID         string `json:"id"`
	Text       string `json:"text"`
	Tenant     string `json:"tenant"`
	Permission string `json:"permission"`
	Lang       string `json:"lang"`
	DocVersion string `json:"doc_version"`
	Group      string `json:"group"`
	Difficulty string `json:"difficulty"`
	Expected   struct {
		Category         string `json:"category"`
		NeedsHumanReview *bool  `json:"needs_human_review"`
	} `json:"expected"`
}

func loadFixtures(t testing.TB) []fixtureTask {
	t.Helper()
	f, err := os.Open("../../fixtures/tasks.jsonl")
	if err != nil {
		t.Fatalf("open task fixtures: %v", err)
	}
	defer f.Close()
	var tasks []fixtureTask
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		var ft fixtureTask
		if err := json.Unmarshal(sc.Bytes(), &ft); err != nil {
			t.Fatalf("task fixtures line %d: %v", len(tasks)+1, err)
		}
		tasks = append(tasks, ft)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(tasks) == 0 {
		t.Fatal("task fixtures: no tasks")
	}
	return tasks
}

func (ft *fixtureTask) request(mode string) *model.Request {
	return &model.Request{
		TaskID: ft.ID,
		Text:   ft.Text,
		Mode:   mode,
		Scope:  model.Scope{Tenant: ft.Tenant, Permission: ft.Permission, Lang: ft.Lang, DocVersion: ft.DocVersion},
	}
}

// tally counts correct answers per label.
type tally map[string][2]int

func (t tally) add(label string, ok bool) {
	c := t[label]
	c[1]++
	if ok {
		c[0]++
	}
	t[label] = c
}

func (t tally) rate(label string) float64 {
	c := t[label]
	if c[1] == 0 {
		return 0
	}
	return float64(c[0]) / float64(c[1])
}

func (t tally) log(tb testing.TB, name string) {
	labels := make([]string, 0, len(t))
	for l := range t {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, l := range labels {
		c := t[l]
		tb.Logf("%s %-14s %3d/%3d = %5.1f%%", name, l, c[0], c[1], 100*t.rate(l))
	}
}

func TestAccuracyOnFixtures(t *testing.T) {
	t.Parallel()
	tasks := loadFixtures(t)
	small, large := newTestModel(t, Small()), newTestModel(t, Large())
	acc := map[string]tally{"small": {}, "large": {}}
	review := map[string]tally{"small": {}, "large": {}}
	wrong := map[string]map[string]string{"small": {}, "large": {}}
	for _, ft := range tasks {
		for name, m := range map[string]*Model{"small": small, "large": large} {
			resp, err := m.Complete(context.Background(), ft.request(model.ModeFull))
			if err != nil {
				t.Fatalf("%s %s: %v", name, ft.ID, err)
			}
			a, err := ParseAnswer(resp.Content)
			if err != nil {
				t.Fatalf("%s %s: %v", name, ft.ID, err)
			}
			ok := a.Category == ft.Expected.Category
			for _, label := range []string{"all", "diff=" + ft.Difficulty, "lang=" + ft.Lang, "group=" + ft.Group} {
				acc[name].add(label, ok)
			}
			if ft.Expected.NeedsHumanReview != nil {
				review[name].add("all", a.NeedsHumanReview == *ft.Expected.NeedsHumanReview)
			}
			if !ok {
				wrong[name][ft.Text] = a.Category + " (want " + ft.Expected.Category + ")"
			}
		}
	}
	for _, name := range []string{"small", "large"} {
		acc[name].log(t, name+" accuracy")
		review[name].log(t, name+" review  ")
		t.Logf("%s: %d distinct texts misread", name, len(wrong[name]))
	}
	for text, got := range wrong["large"] {
		t.Logf("large misreads %q: %s", text, got)
	}
	checks := []struct {
		name      string
		got       float64
		min, max  float64
		condition string
	}{
		{"large overall", acc["large"].rate("all"), 0.95, 1, ">= 95%"},
		{"large hopeless share", 1 - acc["large"].rate("all"), 0.01, 0.05, "1-5% (the ambiguous tickets)"},
		{"small easy", acc["small"].rate("diff=easy"), 0.85, 1, ">= 85%"},
		{"small hard", acc["small"].rate("diff=hard"), 0, 0.60, "<= 60%"},
		{"large review agreement", review["large"].rate("all"), 0.95, 1, ">= 95%"},
	}
	for _, c := range checks {
		if c.got < c.min || c.got > c.max {
			t.Errorf("%s: got %.3f; want %s", c.name, c.got, c.condition)
		}
	}
	for _, lang := range []string{"lang=de", "lang=es", "lang=zh"} {
		if got := acc["large"].rate(lang); got < 0.95 {
			t.Errorf("large %s: got %.3f; want >= 0.95", lang, got)
		}
	}
}

// newTestModel runs at time-scale 1, so traces carry the nominal simulated
// durations, with sleeping replaced by a no-op.
func newTestModel(t testing.TB, cfg Config) *Model {
	t.Helper()
	cfg.TimeScale = 1
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", cfg.Name, err)
	}
	m.sleep = func(context.Context, time.Duration) error { return nil }
	return m
}
