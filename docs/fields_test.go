package docs

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/capacity"
	"github.com/crab-testbed/crab/stack"
)

// rawSections are the experiment's sections kept as read (a yaml.Node)
// and decoded by the command that uses them: their fields are the fields
// of the type that command decodes them into.
var rawSections = map[string]reflect.Type{
	"sweep": reflect.TypeOf(capacity.Config{}),
}

var yamlNode = reflect.TypeOf(yaml.Node{})

// field is one item of the experiment-field reference: the dotted paths
// it names (a parent naming two fields gives its children both) and its
// own text, without its children's.
type field struct {
	paths []string
	line  int
	text  string
}

var (
	bullet    = regexp.MustCompile("^( *)- (.*)$")
	leadNames = regexp.MustCompile("^(?:`[a-z0-9_]+`(?:, | or |, and | and )?)+")
	fieldName = regexp.MustCompile("`([a-z0-9_]+)`")
)

// fieldList reads the experiment-field reference of docs/formats.md: the
// bullet list under the heading "Experiment fields", one item per field
// (or per group of fields named together), nested two spaces a level.
func fieldList(t *testing.T) (file string, items []field) {
	t.Helper()
	file = "docs/formats.md"
	text := read(t, file)
	lines := strings.Split(text, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return l == "### Experiment fields" })
	if start < 0 {
		t.Fatalf("%s: no heading \"### Experiment fields\": the experiment-field reference moved; update docs/drift_test.go", file)
	}
	var indents []int
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "#") {
			break
		}
		if m := bullet.FindStringSubmatch(l); m != nil {
			items = append(items, field{line: i + 1, text: m[2]})
			indents = append(indents, len(m[1]))
			continue
		}
		if len(items) > 0 && strings.TrimSpace(l) == "" {
			if i+1 < len(lines) && !strings.HasPrefix(lines[i+1], " ") && !bullet.MatchString(lines[i+1]) {
				break // the list ended
			}
			continue
		}
		if len(items) > 0 {
			items[len(items)-1].text += " " + strings.TrimSpace(l)
		}
	}
	if len(items) == 0 {
		t.Fatalf("%s:%d: no bullet list under \"### Experiment fields\"", file, start+1)
	}
	type open struct {
		indent int
		paths  []string
	}
	var stack []open
	for k := range items {
		it := &items[k]
		for len(stack) > 0 && stack[len(stack)-1].indent >= indents[k] {
			stack = stack[:len(stack)-1]
		}
		lead := leadNames.FindString(it.text)
		if lead == "" {
			t.Errorf("%s:%d: a field item must start with its `name` (or `a`, `b` for fields described together): %q", file, it.line, it.text)
			continue
		}
		parents := []string{""}
		if len(stack) > 0 {
			parents = stack[len(stack)-1].paths
		}
		for _, p := range parents {
			for _, n := range fieldName.FindAllStringSubmatch(lead, -1) {
				it.paths = append(it.paths, strings.TrimPrefix(p+"."+n[1], "."))
			}
		}
		stack = append(stack, open{indents[k], it.paths})
	}
	return file, items
}

// yamlFields walks a type's YAML fields as an experiment file spells them:
// dotted paths, through pointers, lists and maps of structs, and inline
// structs; inline maps (that take unknown keys to reject them) name none.
func yamlFields(t reflect.Type, prefix string, visit func(path string, f reflect.StructField)) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() == "time" || t == yamlNode {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if slices.Contains(strings.Split(opts, ","), "inline") {
			yamlFields(f.Type, prefix, visit)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name) // yaml.v3's own rule
		}
		visit(prefix+name, f)
		if f.Type == yamlNode {
			rt, ok := rawSections[prefix+name]
			if !ok {
				panic(prefix + name + " is kept as raw YAML: name the type that decodes it in rawSections")
			}
			yamlFields(rt, prefix+name+".", visit)
			continue
		}
		yamlFields(f.Type, prefix+name+".", visit)
	}
}

// deprecatedFields are names the reference may list that no struct field
// carries, each with why it is still read.
var deprecatedFields = map[string]string{}

// The experiment-field reference of docs/formats.md names every field an
// experiment file may hold (read by reflection from eval.Experiment and
// the specs it nests), and no field that is not one.
func TestDocsExperimentFields(t *testing.T) {
	t.Parallel()
	file, items := fieldList(t)
	documented := map[string]int{}
	for _, it := range items {
		for _, p := range it.paths {
			if l, ok := documented[p]; ok {
				t.Errorf("%s:%d: field %s is listed twice (also line %d)", file, it.line, p, l)
			}
			documented[p] = it.line
		}
	}
	code := map[string]bool{}
	yamlFields(reflect.TypeOf(eval.Experiment{}), "", func(path string, _ reflect.StructField) { code[path] = true })
	if len(code) < 20 {
		t.Fatalf("read only %d fields from eval.Experiment: the walk is broken", len(code))
	}
	var missing []string
	for p := range code {
		if _, ok := documented[p]; !ok {
			missing = append(missing, p)
		}
	}
	slices.Sort(missing)
	for _, p := range missing {
		t.Errorf("%s: the experiment-field reference lacks %s, a field of the experiment file", file, p)
	}
	for p, line := range documented {
		if !code[p] && deprecatedFields[p] == "" {
			t.Errorf("%s:%d: the experiment-field reference lists %s, which no experiment field is", file, line, p)
		}
	}
}

var statedDefault = regexp.MustCompile("default `([^`]+)`")

// A default the reference states as "default `X`" is the one the
// experiment's parser fills (with the gate's defaults in force), and every
// default the parser fills outside lists and maps is stated. order's
// default is a rule, checked by TestDocsDefaultOrder.
func TestDocsExperimentDefaults(t *testing.T) {
	t.Parallel()
	file, items := fieldList(t)
	e := parse(t, "")
	g := e.Gate.Defaults()
	margin, alpha, falseHits, effect := g.Margin()*100, g.ErrorRate(), g.FalseHitLimit(), g.MinEffect()
	g.MarginPP, g.Alpha, g.MaxFalseHitRate, g.MinEffectPct = &margin, &alpha, &falseHits, &effect
	e.Gate = g
	filled := map[string]string{}
	var walk func(v reflect.Value, prefix string)
	walk = func(v reflect.Value, prefix string) {
		yamlFields(v.Type(), prefix, func(path string, f reflect.StructField) {
			if strings.Count(path, ".") != strings.Count(prefix, ".") {
				return // nested: walked below
			}
			fv := v.FieldByIndex(f.Index)
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					return
				}
				fv = fv.Elem()
			}
			switch fv.Kind() {
			case reflect.Slice, reflect.Map:
				return
			case reflect.Struct:
				if _, ok := fv.Interface().(time.Time); !ok {
					walk(fv, path+".")
					return
				}
			}
			if !fv.IsZero() {
				filled[path] = format(fv)
			}
		})
	}
	walk(reflect.ValueOf(e).Elem(), "")
	// What minimal sets itself, and order's rule, are no defaults.
	for _, p := range []string{"tasks", "contract", "arrival.rate", "order", "seed"} {
		delete(filled, p)
	}
	stated := map[string]bool{}
	for _, it := range items {
		m := statedDefault.FindStringSubmatch(it.text)
		for _, p := range it.paths {
			want, ok := filled[p]
			switch {
			case ok && m == nil:
				t.Errorf("%s:%d: %s: states no default; the code fills `%s` (write \"default `%s`\")", file, it.line, p, want, want)
			case ok && m[1] != want:
				t.Errorf("%s:%d: %s: states default `%s`; the code fills `%s`", file, it.line, p, m[1], want)
			}
			stated[p] = ok
		}
	}
	for p, want := range filled {
		if _, ok := stated[p]; !ok {
			t.Errorf("%s: %s: the code fills default `%s` and the reference has no item for it", file, p, want)
		}
	}
}

// format writes a filled default as the reference states it.
func format(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case stack.Duration:
		return dur(x.Std())
	case time.Duration:
		return dur(x)
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return num(v.Float())
	}
	return fmt.Sprint(v.Interface())
}

// Every value the parser accepts for a field of closed choice, as its
// error for a value it does not know lists them, is named in that field's
// item of the reference.
func TestDocsExperimentChoices(t *testing.T) {
	t.Parallel()
	file, items := fieldList(t)
	byPath := map[string]field{}
	for _, it := range items {
		for _, p := range it.paths {
			byPath[p] = it
		}
	}
	model := "{name: m, kind: large, capacity: {slots: 4}}"
	arm := "- {name: b, model: m}"
	for _, c := range []struct{ path, old, new string }{
		{"order", "", "order: nosuch"},
		{"arrival.pattern", "arrival: {rate: 40}", "arrival: {pattern: nosuch, rate: 40}"},
		{"gate.rule", "", "gate: {rule: nosuch}"},
		{"gate.objective", "", "gate: {objective: nosuch}"},
		{"gate.waive", "", "gate: {waive: [nosuch]}"},
		{"grade.fields.rule", "", "grade: {fields: [{field: /a, rule: nosuch}]}"},
		{"grade.command.protocol", "", "grade: {command: {run: [x], protocol: nosuch}}"},
		{"models.backend", model, "{name: m, backend: nosuch}"},
		{"models.kind", model, "{name: m, kind: nosuch}"},
		{"arms.mode", arm, "- {name: b, model: m, mode: nosuch}"},
		{"arms.cache.store", arm, "- {name: b, model: m, cache: {store: nosuch}}"},
		{"arms.cache.kind", arm, "- {name: b, model: m, cache: {kind: nosuch}}"},
		{"arms.cache.embedder", arm, "- {name: b, model: m, cache: {kind: semantic, threshold: 0.9, embedder: nosuch}}"},
		{"arms.router.mode", arm, "- {name: b, router: {mode: nosuch, small: m, large: m}}"},
		{"arms.contract.policy", arm, "- {name: b, model: m, contract: {policy: nosuch}}"},
	} {
		y := c.new + "\n" + minimal
		if c.old != "" {
			y = strings.Replace(minimal, c.old, c.new, 1)
		}
		_, err := eval.ParseExperiment([]byte(y), "x.yaml")
		if err == nil {
			t.Errorf("%s: nosuch is accepted; the test's probe no longer reaches the field", c.path)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, `field "`+c.path+`"`) {
			t.Errorf("%s: the error for nosuch names another field: %s", c.path, msg)
			continue
		}
		m := regexp.MustCompile(`\((?:want|can waive:) ([^)]+)\)|are (.+), got`).FindStringSubmatch(msg)
		if m == nil {
			t.Errorf("%s: the error for nosuch lists no choices: %s", c.path, msg)
			continue
		}
		it, ok := byPath[c.path]
		if !ok {
			continue // TestDocsExperimentFields reports it
		}
		for _, v := range regexp.MustCompile(`, | or | and `).Split(m[1]+m[2], -1) {
			if !strings.Contains(it.text, "`"+v+"`") {
				t.Errorf("%s:%d: %s: names no `%s`; the code accepts %s", file, it.line, c.path, v, m[1]+m[2])
			}
		}
	}
}
