package contract

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"
)

func loadVoice(t *testing.T) *Contract {
	t.Helper()
	raw, err := os.ReadFile("testdata/voice.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load("voice.schema.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDeriveProofConfig: without a declaration the proof decides every
// required enum, boolean and number the same, nested and in array items,
// keeps required strings and arrays non-empty, and names no demo field.
func TestDeriveProofConfig(t *testing.T) {
	t.Parallel()
	cfg := loadVoice(t).DeriveProofConfig()
	if want := []string{"intent.name", "slots.name", "slots.position", "turns", "confirm"}; !slices.Equal(cfg.Same, want) {
		t.Errorf("Same %q; want %q", cfg.Same, want)
	}
	if want := []string{"intent.domain", "slots.value", "reply"}; !slices.Equal(cfg.Keep, want) {
		t.Errorf("Keep %q; want %q", cfg.Keep, want)
	}
	if cfg.Superset != nil || cfg.Evidence != "" || !cfg.Derived {
		t.Errorf("Superset %q, Evidence %q, Derived %v; want none, none, true", cfg.Superset, cfg.Evidence, cfg.Derived)
	}
	triage := loadTriage(t).DeriveProofConfig()
	if want := []string{"category", "needs_human_review"}; !slices.Equal(triage.Same, want) {
		t.Errorf("triage Same %q; want %q", triage.Same, want)
	}
}

// TestProveVoice: task by task, a short answer that changes the intent, a
// slot or a boolean is refuted naming the field; one that only words the
// reply shorter and leaves out the optional note passes.
func TestProveVoice(t *testing.T) {
	t.Parallel()
	c := loadVoice(t)
	full := map[string]any{
		"intent": map[string]any{"name": "set_timer", "domain": "clock"},
		"slots":  []any{map[string]any{"name": "duration_s", "value": "600", "position": 3}},
		"turns":  1, "confirm": false, "reply": "Okay, a timer for ten minutes starts now.", "note": "ten minutes",
	}
	render := func(edit func(m map[string]any)) *Answer {
		var m map[string]any
		b, _ := json.Marshal(full)
		_ = json.Unmarshal(b, &m)
		m["reply"], m["note"] = "Timer set.", nil
		if edit != nil {
			edit(m)
		}
		out, _ := json.Marshal(m)
		return &Answer{Output: string(out)}
	}
	fullOut, _ := json.Marshal(full)
	slot := func(m map[string]any) map[string]any { return m["slots"].([]any)[0].(map[string]any) }
	tests := []struct {
		name             string
		edit             func(m map[string]any)
		changed, dropped []string
	}{
		{name: "shorter reply, note left out"},
		{name: "intent changed", edit: func(m map[string]any) { m["intent"].(map[string]any)["name"] = "weather" }, changed: []string{"intent.name"}},
		{name: "slot name changed", edit: func(m map[string]any) { slot(m)["name"] = "date" }, changed: []string{"slots.name"}},
		{name: "slot position changed", edit: func(m map[string]any) { slot(m)["position"] = 4 }, changed: []string{"slots.position"}},
		{name: "slot value emptied", edit: func(m map[string]any) { slot(m)["value"] = "" }, dropped: []string{"slots.value"}},
		{name: "confirmation flipped", edit: func(m map[string]any) { m["confirm"] = true }, changed: []string{"confirm"}},
		{name: "turn count changed", edit: func(m map[string]any) { m["turns"] = 2 }, changed: []string{"turns"}},
		{name: "same number written otherwise", edit: func(m map[string]any) { m["turns"] = json.Number("1.0") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := c.Prove([]Pair{{Task: "v1", Full: &Answer{Output: string(fullOut)}, Short: render(tt.edit)}}, ProofConfig{})
			tp := p.Tasks[0]
			want := ProofPass
			if tt.changed != nil || tt.dropped != nil {
				want = ProofFail
			}
			if tp.Verdict != want || !slices.Equal(tp.Changed, tt.changed) || !slices.Equal(tp.Dropped, tt.dropped) {
				t.Errorf("verdict %s, changed %q, dropped %q; want %s, %q, %q (problems %q)", tp.Verdict, tp.Changed, tp.Dropped, want, tt.changed, tt.dropped, tp.Problems)
			}
		})
	}
}

// TestCheckProofConfig: a declared field the contract lacks is named with
// its list and position.
func TestCheckProofConfig(t *testing.T) {
	t.Parallel()
	c := loadVoice(t)
	if err := c.CheckProofConfig(ProofConfig{Same: []string{"intent.name", "slots.0.name", "confirm"}, Keep: []string{"slots.value"}}); err != nil {
		t.Errorf("valid declaration: %v", err)
	}
	tests := []struct {
		name  string
		cfg   ProofConfig
		list  string
		index int
	}{
		{"unknown member", ProofConfig{Same: []string{"intent.name", "intent.kind"}}, "decide", 1},
		{"unknown root", ProofConfig{Keep: []string{"summary"}}, "keep", 0},
		{"empty segment", ProofConfig{Same: []string{"intent..name"}}, "decide", 0},
		{"superset not an array", ProofConfig{Superset: []string{"reply"}}, "superset", 0},
		{"evidence not an array", ProofConfig{Evidence: "intent"}, "evidence", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := c.CheckProofConfig(tt.cfg)
			var fe *ProofFieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrProofField) || fe.List != tt.list || fe.Index != tt.index {
				t.Errorf("got %v; want a ProofFieldError in %s[%d]", err, tt.list, tt.index)
			}
		})
	}
}

// FuzzProofPath: any declared path is found in the contract or refused
// with a ProofFieldError, and reading it from any answer never panics.
func FuzzProofPath(f *testing.F) {
	raw, err := os.ReadFile("testdata/voice.schema.json")
	if err != nil {
		f.Fatal(err)
	}
	c, err := Load("voice.schema.json", raw)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("slots.value", `{"slots":[{"value":"1"},{"name":"x"}]}`)
	f.Add("intent.name", `{"intent":{"name":"weather"}}`)
	f.Add("slots.0.position", `{"slots":[]}`)
	f.Add("a..b", `[]`)
	f.Fuzz(func(t *testing.T, path, answer string) {
		err := c.CheckProofConfig(ProofConfig{Same: []string{path}})
		var fe *ProofFieldError
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("error %v is not a ProofFieldError", err)
		}
		doc, err := DecodeAnswer(answer)
		if err != nil {
			return
		}
		valueAt(doc, splitPath(path))
	})
}
