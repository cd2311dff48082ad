package model

import (
	"reflect"
	"slices"
	"strings"
)

// Scope is the identity an answer is built for. Two requests with different
// scopes must never share an answer, whatever their text.
//
// Scope is embedded wherever a scope travels (a request, a record, an audit
// scenario line, an API key's identity, a Parquet row), so its tags name
// the field in every format crab writes: records.jsonl (every field but
// the tenant left out when empty), keys files, Parquet columns. Each field
// has one row in the table of scope fields (ScopeFields), from which the
// cache key, the leak kinds and counts, the audit's keys and probes and the
// checks that require a whole scope are derived; a test holds the struct
// and the table in step.
type Scope struct {
	Tenant     string `json:"tenant" yaml:"tenant" parquet:"tenant,dict,optional"`
	Permission string `json:"permission,omitempty" yaml:"permission" parquet:"permission,dict,optional"`
	Lang       string `json:"lang,omitempty" yaml:"lang" parquet:"lang,dict,optional"`
	DocVersion string `json:"doc_version,omitempty" yaml:"doc_version" parquet:"doc_version,dict,optional"`
}

// ScopeField is one field of a scope: the one place that says what the
// field is called, what serving an answer across it is called, and how
// its values compare.
type ScopeField struct {
	// Name is the field's name wherever it is written: the cache key field
	// (experiment files, `crab audit --key`), records.jsonl, tasks,
	// scenario lines, keys files and Parquet columns.
	Name string
	// Leak is the leak kind of a cache hit whose answer was built for
	// another value of the field.
	Leak string
	// Get reads the field of a scope (a copy: reading never makes a scope
	// escape to the heap); Set writes it.
	Get func(Scope) string
	Set func(*Scope, string)
	// Fold, when not nil, appends the normalised value to dst: values that
	// fold alike are one value (the cache key holds the folded value).
	// Nil: values are compared and keyed byte for byte.
	Fold func(dst []byte, v string) []byte
	// Equal, when not nil, is Fold's equality without allocating; it must
	// agree with comparing folded values.
	Equal func(a, b string) bool
}

// Same reports whether a and b are one value of the field.
func (f *ScopeField) Same(a, b string) bool {
	if f.Equal != nil {
		return f.Equal(a, b)
	}
	return a == b
}

// scopeFields is the table of scope fields, in precedence order: the
// order of the fields in the cache key encoding, and the order a hit
// across several of them is labelled in (the first that differs).
//
// A new scope field is a field of Scope (its name in the json, yaml and
// parquet tags) and a row here; `go generate ./eval/records` then rewrites
// the records codec (a test fails until it has), and eval.Task, which keeps
// its scope's fields as its own for the order of a tasks file's keys, gets
// the field and a line in Task.Scope.
var scopeFields = []ScopeField{
	{Name: "tenant", Leak: "cross_tenant", // built for another tenant
		Get: func(s Scope) string { return s.Tenant }, Set: func(s *Scope, v string) { s.Tenant = v }},
	{Name: "permission", Leak: "permission", // built for another permission (role)
		Get: func(s Scope) string { return s.Permission }, Set: func(s *Scope, v string) { s.Permission = v }},
	{Name: "doc_version", Leak: "stale", // built from another (usually older) document version
		Get: func(s Scope) string { return s.DocVersion }, Set: func(s *Scope, v string) { s.DocVersion = v }},
	{Name: "lang", Leak: "language", // built for another language, compared after NormalizeLang
		Get: func(s Scope) string { return s.Lang }, Set: func(s *Scope, v string) { s.Lang = v },
		Fold: AppendLang, Equal: LangEqual},
}

// ScopeFields is the table of scope fields in precedence order (see
// ScopeField). The slice is shared: callers must not change it.
func ScopeFields() []ScopeField { return scopeFields }

// scopeColumns is scopeFields in column order (see ScopeColumns).
var scopeColumns = columnOrder(scopeFields)

// ScopeColumns is the table in the order Scope declares its fields, the
// order of the columns of every format that writes a scope (JSON, Parquet,
// the cache's stored entries); a row of no field of Scope comes last. The
// slice is shared: callers must not change it.
func ScopeColumns() []ScopeField { return scopeColumns }

// columnOrder sorts a copy of fields by the position of the field of Scope
// whose JSON name is the row's name.
func columnOrder(fields []ScopeField) []ScopeField {
	typ := reflect.TypeFor[Scope]()
	pos := func(name string) int {
		for i := range typ.NumField() {
			if tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); tag == name {
				return i
			}
		}
		return typ.NumField()
	}
	out := slices.Clone(fields)
	slices.SortStableFunc(out, func(a, b ScopeField) int { return pos(a.Name) - pos(b.Name) })
	return out
}

// LookupScopeField returns the row of the named field.
func LookupScopeField(name string) (*ScopeField, bool) {
	for i := range scopeFields {
		if scopeFields[i].Name == name {
			return &scopeFields[i], true
		}
	}
	return nil, false
}

// Diff returns the first field, in precedence order, on which an answer
// built for s differs from what a request with scope o may receive; nil
// when the scopes are the same. It does not allocate.
func (s Scope) Diff(o Scope) *ScopeField {
	for i := range scopeFields {
		f := &scopeFields[i]
		if !f.Same(f.Get(s), f.Get(o)) {
			return f
		}
	}
	return nil
}

// Equal reports whether s and o are the same scope: every field byte for
// byte, languages after NormalizeLang. It is the one scope equality of
// crab: the cache's leak check, the runner's pass rule and the audit all
// use it. It does not allocate.
func (s Scope) Equal(o Scope) bool { return s.Diff(o) == nil }

// Normalized returns s with every field folded (the language normalised,
// see NormalizeLang).
func (s Scope) Normalized() Scope {
	for _, f := range scopeFields {
		if f.Fold != nil {
			v := f.Get(s)
			f.Set(&s, string(f.Fold(make([]byte, 0, len(v)), v)))
		}
	}
	return s
}

// Missing returns the name of the first field, in column order, that is
// blank in s; "" when every field is set. Tasks and scenario requests must
// carry a whole scope.
func (s Scope) Missing() string {
	for _, f := range ScopeColumns() {
		if strings.TrimSpace(f.Get(s)) == "" {
			return f.Name
		}
	}
	return ""
}

// Values is every field of s by name, empty ones included: the scope as an
// outside service reads it, each field always present.
func (s Scope) Values() map[string]string {
	out := make(map[string]string, len(scopeFields))
	for _, f := range scopeFields {
		out[f.Name] = f.Get(s)
	}
	return out
}
