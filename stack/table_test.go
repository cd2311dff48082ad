package stack

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/router"
)

func TestTableLookups(t *testing.T) {
	t.Parallel()
	tbl := Builtin()
	if k, ok := tbl.Kind(""); !ok || k.Name != cache.KindExact {
		t.Errorf("Kind(\"\") = %v, %v; want the exact kind, the default", k, ok)
	}
	if _, ok := tbl.Kind("fuzzy"); ok {
		t.Error("Kind(fuzzy) found; want none")
	}
	if _, err := tbl.OpenStore("floppy", cache.StoreConfig{}); !errors.Is(err, ErrUnknownStore) || !strings.Contains(err.Error(), "ristretto or redis") {
		t.Errorf("OpenStore(floppy): %v; want ErrUnknownStore listing ristretto or redis", err)
	}
	s, err := tbl.OpenStore("", cache.StoreConfig{NumCounters: 1 << 10, MaxCost: 1 << 20})
	if err != nil {
		t.Fatalf("OpenStore(\"\"): %v; want the default store", err)
	}
	s.Close()
	if _, err := tbl.NewScorer("astrology"); !errors.Is(err, router.ErrUnknownScorer) || !strings.Contains(err.Error(), "want feature, an http(s):// URL") {
		t.Errorf("NewScorer(astrology): %v; want ErrUnknownScorer listing feature", err)
	}
	if sc, err := tbl.NewScorer(""); err != nil || sc == nil {
		t.Errorf("NewScorer(\"\"): %v, %v; want the feature scorer", sc, err)
	}
	help := tbl.Help()
	for _, name := range append(append(tbl.KindNames(), tbl.StoreNames()...), tbl.ScorerNames()...) {
		if !strings.Contains(help, "  "+name+" ") {
			t.Errorf("Help lacks %q:\n%s", name, help)
		}
	}
	if got, want := OrList([]string{"a", "b", "c"}), "a, b or c"; got != want {
		t.Errorf("OrList = %q; want %q", got, want)
	}
}

// A kind the table does not list is refused by Build too, not only by
// Validate.
func TestBuildUnknownKind(t *testing.T) {
	t.Parallel()
	tbl := Builtin()
	tbl.Kinds = tbl.Kinds[:1]
	backends := map[string]model.Model{"large": (&recorder{}).model("large", ok(1))}
	_, err := tbl.Build(ArmSpec{Name: "a", Model: "large", Cache: &CacheSpec{Kind: cache.KindSemantic}}, backends, Options{})
	if !errors.Is(err, ErrUnknownKind) {
		t.Errorf("Build: %v; want ErrUnknownKind", err)
	}
}

// The semantic kind's own keys are inline: a cache block reads and writes
// flat, in YAML (experiment and serve files) as in JSON (manifests), as
// it did when the keys were CacheSpec's own.
func TestSemanticSettingsInline(t *testing.T) {
	t.Parallel()
	var c CacheSpec
	dec := yaml.NewDecoder(strings.NewReader("{kind: semantic, threshold: 0.9, embedder: openai, embed_model: m}"))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c.Threshold != 0.9 || c.Embedder != "openai" || c.EmbedModel != "m" {
		t.Fatalf("decoded %+v; want threshold 0.9, embedder openai, embed_model m", c.Settings)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(raw); !strings.Contains(s, `"Kind":"semantic","Threshold":0.9,"Embedder":"openai","EmbedModel":"m"`) {
		t.Errorf("manifest JSON %s; want the semantic keys flat after Kind", s)
	}
	dec = yaml.NewDecoder(strings.NewReader("{kind: semantic, treshold: 0.9}"))
	dec.KnownFields(true)
	if err := dec.Decode(&CacheSpec{}); err == nil || !strings.Contains(err.Error(), "treshold") {
		t.Errorf("misspelt key: %v; want an error naming it", err)
	}
}
