package model_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/cache/audit"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/export"
	"github.com/crab-testbed/crab/model"
)

// Every row of the table of scope fields is a field of Scope written
// under the row's name in every format that carries a scope, and every
// field of Scope has a row.
func TestScopeFieldsMatchScope(t *testing.T) {
	if err := scopeDrift(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range model.ScopeColumns() {
		names = append(names, f.Name)
	}
	if want := []string{"tenant", "permission", "lang", "doc_version"}; !slices.Equal(names, want) {
		t.Fatalf("ScopeColumns = %v; want %v", names, want)
	}
	if got, want := cache.LeakKinds(), []string{"cross_tenant", "permission", "stale", "language", "system_prompt", "history"}; !slices.Equal(got, want) {
		t.Fatalf("LeakKinds = %v; want %v", got, want)
	}
}

// scopeDrift checks the table against Scope's fields and their tags, the
// Parquet columns of an export row and the keys of a record.
func scopeDrift() error {
	typ := reflect.TypeFor[model.Scope]()
	var columns []string
	for _, path := range parquet.SchemaOf(export.Row{}).Columns() {
		columns = append(columns, strings.Join(path, "."))
	}
	var s model.Scope
	for _, f := range model.ScopeFields() {
		f.Set(&s, "v-"+f.Name)
	}
	raw, _ := (&records.Record{Scope: s}).AppendJSON(nil)
	var rec map[string]any
	if err := json.Unmarshal(raw, &rec); err != nil {
		return err
	}
	for _, f := range model.ScopeFields() {
		sf, ok := fieldNamed(typ, f.Name)
		if !ok {
			return fmt.Errorf("%s: no field of model.Scope has the JSON name %q", f.Name, f.Name)
		}
		for _, key := range []string{"yaml", "parquet"} {
			if name, _, _ := strings.Cut(sf.Tag.Get(key), ","); name != f.Name {
				return fmt.Errorf("%s: Scope.%s is %q in %s; want %q", f.Name, sf.Name, name, key, f.Name)
			}
		}
		if got := f.Get(s); got != "v-"+f.Name || reflect.ValueOf(s).FieldByIndex(sf.Index).String() != got {
			return fmt.Errorf("%s: Get/Set do not reach Scope.%s", f.Name, sf.Name)
		}
		if !slices.Contains(columns, f.Name) {
			return fmt.Errorf("%s: no Parquet column of that name in %v", f.Name, columns)
		}
		if rec[f.Name] != "v-"+f.Name {
			return fmt.Errorf("%s: a record writes %s", f.Name, raw)
		}
	}
	if n := len(model.ScopeFields()); n != typ.NumField() {
		return fmt.Errorf("the table has %d rows; Scope has %d fields", n, typ.NumField())
	}
	return nil
}

func fieldNamed(typ reflect.Type, name string) (reflect.StructField, bool) {
	for i := range typ.NumField() {
		if tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); tag == name {
			return typ.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// region is a scope field for TestAddingAScopeField: the region subtag of
// the language ("en-US" → "us"). A test cannot add a field to Scope, so
// the row reads and writes the language; a real field is a field of
// Scope and a row of the table.
var region = model.ScopeField{
	Name: "region", Leak: "cross_region",
	Get: func(s model.Scope) string {
		_, r, _ := strings.Cut(model.NormalizeLang(s.Lang), "-")
		return r
	},
	Set: func(s *model.Scope, v string) { s.Lang = s.PrimaryLang() + "-" + v },
}

// TestAddingAScopeField adds a row to the table of scope fields (region,
// before the language) and shows every consumer follows it with no other
// change: the key field and its encoding, the scope equality, the leak
// kind a cache labels and counts a hit with, the audit's probes and
// tables; and that the check of the formats names the one edit left, the
// field of Scope that carries the row into records, keys files, scenario
// lines and Parquet columns. Not parallel: it swaps the table.
func TestAddingAScopeField(t *testing.T) {
	fields := slices.Clone(model.ScopeFields())
	lang := slices.IndexFunc(fields, func(f model.ScopeField) bool { return f.Name == "lang" })
	model.SetScopeFields(t, slices.Insert(fields, lang, region))

	us := &model.Request{Text: "Where is my refund?", Model: "large", Mode: model.ModeFull,
		Scope: model.Scope{Tenant: "acme", Permission: "agent", Lang: "en-US", DocVersion: "v2"}}
	gb := us.Clone()
	gb.Scope.Lang = "en-GB"
	deUS := us.Clone()
	deUS.Scope.Lang = "de-US"

	// The key: a field of its own, in the full preset before the language,
	// and its value in the encoding.
	if got, want := cache.AllFields()[:5], []string{"tenant", "permission", "doc_version", "region", "lang"}; !slices.Equal(got, want) {
		t.Errorf("AllFields starts %v; want %v", got, want)
	}
	spec, err := cache.NewKeySpec([]string{"region", "text"})
	if err != nil {
		t.Fatalf("NewKeySpec(region, text): %v", err)
	}
	if bytes.Equal(spec.Encode(us), spec.Encode(gb)) {
		t.Errorf("region,text keys en-US and en-GB alike")
	}
	if !bytes.Equal(spec.Encode(us), spec.Encode(deUS)) {
		t.Errorf("region,text keys en-US and de-US apart; want one region")
	}
	if !bytes.Contains(spec.Encode(us), []byte("\x06region\x02us")) {
		t.Errorf("encoding %q lacks the field region = us", spec.Encode(us))
	}

	// The scope equality and the leak kind.
	if us.Scope.Equal(gb.Scope) {
		t.Errorf("Scope.Equal(en-US, en-GB) = true")
	}
	if got := cache.LeakKind(us.Scope, gb.Scope); got != "cross_region" {
		t.Errorf("LeakKind(en-US, en-GB) = %q; want cross_region", got)
	}
	if got := cache.LeakKind(us.Scope, deUS.Scope); got != cache.LeakLanguage {
		t.Errorf("LeakKind(en-US, de-US) = %q; want %s", got, cache.LeakLanguage)
	}
	if got := cache.LeakKinds(); !slices.Equal(got[3:5], []string{"cross_region", "language"}) {
		t.Errorf("LeakKinds = %v; want cross_region before language", got)
	}

	// A naive cache serving an answer across regions labels and counts it.
	store, err := cache.NewRistretto(cache.RistrettoConfig{NumCounters: 1 << 10, MaxCost: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	c, err := cache.New(cache.Config{Fields: []string{cache.PresetText}}, store)
	if err != nil {
		t.Fatal(err)
	}
	backend := model.ModelFunc(func(_ context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Content: "refund on its way", Model: "large", FinishReason: model.FinishStop, Scope: req.Scope}, nil
	})
	stack := model.Chain(backend, c.Middleware())
	for _, req := range []*model.Request{us, gb} {
		resp, err := stack.Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if req == gb && (resp.Trace.Cache != model.CacheHit || resp.Trace.Leak != "cross_region") {
			t.Errorf("en-GB after en-US: cache %q, leak %q; want a hit labelled cross_region", resp.Trace.Cache, resp.Trace.Leak)
		}
		store.Wait() // the entry visible to the next request
	}
	leaks := c.Stats().Leaks
	raw, _ := json.Marshal(leaks)
	if leaks.Get("cross_region") != 1 || !bytes.Contains(raw, []byte(`"stale":0,"cross_region":1,"language":0`)) {
		t.Errorf("Stats().Leaks = %s; want one cross_region, in its place", raw)
	}

	// The audit's ladder of keys has a rung for the field, its probes
	// differ in it too, and its tables have a column for it.
	var rungs []string
	for _, c := range audit.StandardConfigs() {
		rungs = append(rungs, c.Name)
	}
	if want := []string{"text", "+tenant", "+permission", "+doc_version", "+region", "+lang", "+conversation"}; !slices.Equal(rungs[:len(want)], want) {
		t.Errorf("audit configurations %v; want them to start %v", rungs, want)
	}
	probes, err := audit.GenerateProbes(audit.ProbeOptions{N: 256, Seed: 7, Pairs: -1})
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	for _, p := range probes {
		// A language drawn anew may bring the region back; region alone
		// among the scope's fields must show.
		if slices.Contains(p.Differs, "cross_region") && !slices.ContainsFunc(p.Differs, func(k string) bool {
			return k == cache.LeakCrossTenant || k == cache.LeakPermission || k == cache.LeakStale || k == cache.LeakLanguage
		}) {
			changed++
			if got := cache.LeakKind(p.First.Scope, p.Second.Scope); got != "cross_region" {
				t.Errorf("probe %s differs in region, yet is labelled %q (%+v, %+v)", p.ID, got, p.First.Scope, p.Second.Scope)
			}
		}
	}
	if changed == 0 {
		t.Errorf("no probe of %d differs in region alone among the scope's fields", len(probes))
	}
	var text strings.Builder
	rep := &audit.Report{Configs: []audit.ConfigResult{{Name: "text", Key: "text", Leaks: leaks}}}
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "  cross_region  ") || !strings.Contains(text.String(), "+doc_version → +region → +lang") {
		t.Errorf("audit table has no cross_region column or +region rung:\n%s", text.String())
	}

	// A row without a field of Scope is caught, naming the edit left.
	if err := scopeDrift(); err == nil || !strings.Contains(err.Error(), "region") {
		t.Errorf("scopeDrift() = %v; want it to name region", err)
	}
}

// The scope equality and the leak kind run on every cache hit: reading the
// table must not allocate.
func TestScopeDiffDoesNotAllocate(t *testing.T) {
	a := model.Scope{Tenant: "acme", Permission: "agent", Lang: "en-US", DocVersion: "v2"}
	b := a
	b.Lang = "EN_us"
	if n := testing.AllocsPerRun(100, func() {
		if !a.Equal(b) || cache.LeakKind(a, b) != "" {
			t.Fatal("en-US and EN_us differ")
		}
	}); n != 0 {
		t.Errorf("Equal and LeakKind: %v allocations; want 0", n)
	}
}

// Values names every field, an empty one too: an outside service reads
// the scope without guessing which fields were left out.
func TestScopeValues(t *testing.T) {
	t.Parallel()
	got := model.Scope{Tenant: "acme"}.Values()
	want := map[string]string{"tenant": "acme", "permission": "", "lang": "", "doc_version": ""}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Values() = %v; want %v", got, want)
	}
}
