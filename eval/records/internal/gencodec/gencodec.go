// Package gencodec writes the lean JSON codec of a record struct from the
// struct's own declaration: for each field, its JSON key (the json tag),
// its Go type and its omitempty or omitzero option decide how it is read
// by the lean scanner and written by AppendJSON. A field is declared once,
// in the struct; the generated file follows it.
//
// The generated code is a part of package records: it calls that
// package's hand-written readers (recordLexer's str, int, bool, float,
// time, strings and mark) and appenders (appendString, appendOmitString,
// appendInt, appendOmitInt, appendBool, appendTrue, appendFloat,
// appendOmitFloat, appendTime, appendOmitTime, appendStrings,
// appendOmitStrings). Types it knows: string, int, bool, float64,
// time.Time and []string. A struct may embed the types listed in
// Embedded; their fields are written as the struct's own, where the
// embedding stands.
package gencodec

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/crab-testbed/crab/model"
)

// Embedded are the types a struct may embed, by the expression that names
// them in its source: a record carries the request's scope whole.
var Embedded = map[string]reflect.Type{
	"model.Scope": reflect.TypeFor[model.Scope](),
}

// Field is one field of the struct as the codec sees it.
type Field struct {
	Name string // Go name
	Key  string // JSON key
	Type string // Go type: string, int, bool, float64, time.Time or []string
	Omit bool   // omitempty (or, for time.Time, omitzero): left out when zero
}

// plainKey is the keys the generated code writes without escaping.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// Fields reads the fields of the struct typeName declared in the Go source
// src (file names the source in errors).
func Fields(file string, src []byte, typeName string) ([]Field, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	st := findStruct(f, typeName)
	if st == nil {
		return nil, fmt.Errorf("%s: no struct type %s", file, typeName)
	}
	var out []Field
	for _, fl := range st.Fields.List {
		pos := fset.Position(fl.Pos())
		typ := types.ExprString(fl.Type)
		if len(fl.Names) == 0 {
			emb, ok := Embedded[typ]
			if !ok {
				return nil, fmt.Errorf("%s: embedded field %s in %s: not supported", pos, typ, typeName)
			}
			for i := range emb.NumField() {
				sf := emb.Field(i)
				if !sf.IsExported() || sf.Tag.Get("json") == "-" {
					continue
				}
				fd, err := field(sf.Name, sf.Type.String(), sf.Tag.Get("json"))
				if err != nil {
					return nil, fmt.Errorf("%s: %s.%s (from %s): %v", pos, typeName, sf.Name, typ, err)
				}
				out = append(out, fd)
			}
			continue
		}
		tag := ""
		if fl.Tag != nil {
			t, err := strconv.Unquote(fl.Tag.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: tag %s: %v", pos, fl.Tag.Value, err)
			}
			tag = reflect.StructTag(t).Get("json")
		}
		for _, n := range fl.Names {
			if !n.IsExported() || tag == "-" {
				continue
			}
			fd, err := field(n.Name, typ, tag)
			if err != nil {
				return nil, fmt.Errorf("%s: %s.%s: %v", pos, typeName, n.Name, err)
			}
			out = append(out, fd)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %s has no fields", file, typeName)
	}
	if out[0].Omit {
		return nil, fmt.Errorf("%s: %s.%s: the first field must always be written (no omitempty)", file, typeName, out[0].Name)
	}
	keys := map[string]string{}
	for _, fd := range out {
		if prev, dup := keys[strings.ToLower(fd.Key)]; dup {
			return nil, fmt.Errorf("%s: %s.%s: key %q also names %s (keys must differ ignoring case)", file, typeName, fd.Name, fd.Key, prev)
		}
		keys[strings.ToLower(fd.Key)] = fd.Name
	}
	return out, nil
}

func findStruct(f *ast.File, name string) *ast.StructType {
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, s := range gd.Specs {
			ts := s.(*ast.TypeSpec)
			if st, ok := ts.Type.(*ast.StructType); ok && ts.Name.Name == name {
				return st
			}
		}
	}
	return nil
}

// field reads one field's json tag.
func field(name, typ, tag string) (Field, error) {
	key, opts, _ := strings.Cut(tag, ",")
	if key == "" {
		key = name
	}
	if !plainKey.MatchString(key) {
		return Field{}, fmt.Errorf("JSON key %q: want letters, digits and _ only", key)
	}
	fd := Field{Name: name, Key: key, Type: typ}
	for o := range strings.SplitSeq(opts, ",") {
		switch {
		case o == "":
		case o == "omitempty" && typ != "time.Time":
			fd.Omit = true
		case o == "omitzero" && typ == "time.Time":
			fd.Omit = true
		default:
			return Field{}, fmt.Errorf("json option %q on a %s: not supported (omitempty for string, int, bool, float64 and []string; omitzero for time.Time)", o, typ)
		}
	}
	if _, ok := kinds[typ]; !ok {
		return Field{}, fmt.Errorf("type %s: not supported (want one of %s)", typ, strings.Join(slices.Sorted(mapKeys(kinds)), ", "))
	}
	return fd, nil
}

func mapKeys(m map[string]kind) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// kind is how one Go type is read and written.
type kind struct {
	read       string // recordLexer method
	write      string // appender for a field always written
	writeOmit  string // appender for an omitempty/omitzero field
	canDecline bool   // the appender takes and returns ok
	str        bool   // a string Clone copies
}

var kinds = map[string]kind{
	"string":    {read: "str", write: "appendString", writeOmit: "appendOmitString", str: true},
	"int":       {read: "int", write: "appendInt", writeOmit: "appendOmitInt"},
	"bool":      {read: "bool", write: "appendBool", writeOmit: "appendTrue"},
	"float64":   {read: "float", write: "appendFloat", writeOmit: "appendOmitFloat", canDecline: true},
	"time.Time": {read: "time", write: "appendTime", writeOmit: "appendOmitTime", canDecline: true},
	"[]string":  {read: "strings", write: "appendStrings", writeOmit: "appendOmitStrings"},
}
