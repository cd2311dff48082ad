// Package contract loads an output contract — a JSON Schema (2020-12) kept
// inside the subset that strict structured-output APIs accept — validates
// model answers against it, and provides the middleware that sends the
// contract with every request and makes sure no answer that breaks it flows
// on as a success.
//
// One file serves both directions: Contract.Raw is sent to the model as its
// response format, and the same schema, compiled once by Load, checks every
// answer locally, because strict mode is not enforced by every server and
// refusals and truncation break it anyway.
package contract

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// ErrBadContract is wrapped by every error Load returns. A contract that
// cannot be loaded is bad input: callers map it to exit code 2 and print the
// error, which names the file, the line and the JSON pointer at fault.
var ErrBadContract = errors.New("contract: bad contract file")

// LoadError says where a contract file is wrong. It wraps ErrBadContract.
type LoadError struct {
	File    string // the name given to Load
	Line    int    // 1-based line of the fault; 0 when unknown
	Pointer string // JSON pointer into the schema document; empty for the whole file or when unknown
	Msg     string // what is wrong
}

// Error renders "file:line: pointer: msg", leaving out the parts that are unknown.
func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Pointer != "" {
		b.WriteString(e.Pointer)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap lets errors.Is(err, ErrBadContract) recognise a LoadError.
func (e *LoadError) Unwrap() error { return ErrBadContract }

// Contract is a compiled output contract. It is immutable after Load and
// safe for concurrent use; compile it once and share it across requests.
type Contract struct {
	name     string
	raw      []byte
	hash     string
	required []string
	nullable map[string]bool // root properties whose value may be null
	schema   *jsonschema.Schema
	fast     *fastNode        // accepts the answers it can prove valid; nil when the schema is beyond it
	printer  *message.Printer // renders the library's error messages
	valid    validMemo
}

// baseURL is the location the schema is compiled under when it has no $id.
// Contracts must be self-contained: references are resolved inside the file
// only, never fetched from disk or network.
const baseURL = "urn:crab:contract"

// Load compiles the JSON Schema in raw. name is used in error messages and
// by Name; it is normally the file name. The schema is compiled as draft
// 2020-12 unless its $schema names another draft; references outside the
// file are refused. Every error wraps ErrBadContract and is a *LoadError.
func Load(name string, raw []byte) (*Contract, error) {
	raw = bytes.Clone(raw)
	doc, err := decodeJSON(bytes.NewReader(raw), len(raw))
	if err != nil {
		var se *syntaxError
		errors.As(err, &se)
		return nil, &LoadError{File: name, Line: lineAt(raw, se.offset), Msg: "malformed JSON: " + se.msg}
	}

	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(baseURL, doc); err != nil {
		return nil, compileError(name, raw, err)
	}
	sch, err := c.Compile(baseURL)
	if err != nil {
		return nil, compileError(name, raw, err)
	}

	sum := sha256.Sum256(raw)
	return &Contract{
		valid:    validMemo{seed: maphash.MakeSeed()},
		name:     name,
		raw:      raw,
		hash:     hex.EncodeToString(sum[:]),
		required: slices.Clone(sch.Required),
		nullable: nullableProps(sch),
		schema:   sch,
		fast:     compileFast(sch),
		printer:  message.NewPrinter(language.English),
	}, nil
}

// Name is the name the contract was loaded under (normally its file name).
func (c *Contract) Name() string { return c.name }

// Raw returns the schema exactly as loaded; it is what a backend sends as
// the response format. The slice is shared: callers must not modify it.
func (c *Contract) Raw() []byte { return c.raw }

// Hash is the hex SHA-256 of the raw bytes as loaded. It identifies the
// contract in manifests and cache keys. It is taken over the bytes rather
// than a canonical form on purpose: those bytes are what the model is sent,
// so any edit, even of whitespace or a description, is a different contract.
func (c *Contract) Hash() string { return c.hash }

// Required lists the root's required property names in file order: the
// fields no shortening of the output may drop. The caller may modify the
// returned slice.
func (c *Contract) Required() []string { return slices.Clone(c.required) }

// Nullable reports whether the root property name admits null: an
// optional value, written as a union with null, that a shortened answer may
// leave out by writing null (e.g. background).
func (c *Contract) Nullable(name string) bool { return c.nullable[name] }

// nullableProps lists the root properties whose schema admits null.
func nullableProps(sch *jsonschema.Schema) map[string]bool {
	out := map[string]bool{}
	for name, p := range sch.Properties {
		if admitsNullSchema(p, 0) {
			out[name] = true
		}
	}
	return out
}

// admitsNullSchema reports whether a compiled schema accepts null, following
// $ref and anyOf a few levels deep.
func admitsNullSchema(s *jsonschema.Schema, depth int) bool {
	if s == nil || depth > 8 {
		return false
	}
	if s.Bool != nil {
		return *s.Bool
	}
	if s.Types != nil && slices.Contains(s.Types.ToStrings(), "null") {
		return true
	}
	if s.Ref != nil && admitsNullSchema(s.Ref, depth+1) {
		return true
	}
	for _, a := range s.AnyOf {
		if admitsNullSchema(a, depth+1) {
			return true
		}
	}
	return false
}

// syntaxError is a JSON document that does not parse, with the byte offset
// where the decoder gave up.
type syntaxError struct {
	offset int
	msg    string
}

func (e *syntaxError) Error() string { return e.msg }

// decodeJSON parses data as exactly one JSON value, keeping numbers exact
// (json.Number) the way the schema library expects. Its error is a
// *syntaxError.
func decodeJSON(data io.Reader, size int) (any, error) {
	dec := json.NewDecoder(data)
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, &syntaxError{offset: int(se.Offset), msg: se.Error()}
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			return nil, &syntaxError{offset: size, msg: "unexpected end of JSON input"}
		default:
			return nil, &syntaxError{offset: int(dec.InputOffset()), msg: err.Error()}
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &syntaxError{offset: int(dec.InputOffset()), msg: "data after the JSON value"}
	}
	return doc, nil
}

// refuseLoader keeps compilation hermetic: a contract that refers to
// another document fails to load instead of reaching the disk or network.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("reference to %q outside the contract file: contracts must be self-contained", url)
}

// compileError turns a schema library error into a LoadError that names
// the JSON pointer (and its line) at fault where the library says it.
func compileError(name string, raw []byte, err error) error {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var verr *jsonschema.ValidationError
		if errors.As(sve.Err, &verr) {
			vs := flatten(verr, message.NewPrinter(language.English))
			if len(vs) > 0 {
				v := vs[0]
				msg := v.Rule + ": " + v.Message
				if len(vs) > 1 {
					msg += fmt.Sprintf(" (and %d more)", len(vs)-1)
				}
				return &LoadError{File: name, Line: lineOfPointer(raw, v.Pointer), Pointer: v.Pointer, Msg: "not a valid JSON Schema: " + msg}
			}
		}
		return &LoadError{File: name, Msg: "not a valid JSON Schema: " + sve.Err.Error()}
	}
	var rxe *jsonschema.InvalidRegexError
	if errors.As(err, &rxe) {
		ptr := fragment(rxe.URL)
		return &LoadError{File: name, Line: lineOfPointer(raw, ptr), Pointer: ptr, Msg: fmt.Sprintf("invalid pattern %q: %v", rxe.Regex, rxe.Err)}
	}
	return &LoadError{File: name, Msg: err.Error()}
}

// fragment returns the JSON pointer in a URL's fragment, or "".
func fragment(u string) string {
	i := strings.IndexByte(u, '#')
	if i < 0 {
		return ""
	}
	f := u[i+1:]
	if !strings.HasPrefix(f, "/") {
		return ""
	}
	return f
}

// lineAt converts a byte offset into a 1-based line number.
func lineAt(raw []byte, off int) int {
	off = min(max(off, 0), len(raw))
	return 1 + bytes.Count(raw[:off], []byte{'\n'})
}

// lineOfPointer finds the line of the value (for an object member: of its
// key) that ptr designates in the JSON document raw; 0 when it is not found.
func lineOfPointer(raw []byte, ptr string) int {
	want := splitPointer(ptr)
	if want == nil {
		return 0
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var stack []ptrFrame // open containers, innermost last
	var path []string    // location of the innermost open container
	at := func(tok string) bool {
		return len(path)+1 == len(want) && want[len(want)-1] == tok && slices.Equal(path, want[:len(path)])
	}
	for first := true; ; first = false {
		tok, err := dec.Token()
		if err != nil {
			return 0
		}
		line := lineAt(raw, int(dec.InputOffset()))
		if first && len(want) == 0 {
			return line
		}
		d, isDelim := tok.(json.Delim)
		top := len(stack) - 1
		if top >= 0 && stack[top].wantKey && !(isDelim && d == '}') {
			k, _ := tok.(string)
			stack[top].key, stack[top].wantKey = k, false
			if at(k) {
				return line
			}
			continue
		}
		if isDelim && (d == '}' || d == ']') {
			stack = stack[:top]
			if len(path) > 0 && len(stack) > 0 {
				path = path[:len(path)-1]
			}
			if len(stack) > 0 {
				stack[len(stack)-1].next()
			}
			continue
		}
		// A value: its location is the innermost path plus its key or index.
		var self string
		if top >= 0 {
			if stack[top].array {
				self = strconv.Itoa(stack[top].index)
				if at(self) {
					return line
				}
			} else {
				self = stack[top].key
			}
		}
		if isDelim && (d == '{' || d == '[') {
			if top >= 0 {
				path = append(path, self)
			}
			stack = append(stack, ptrFrame{array: d == '[', wantKey: d == '{'})
			continue
		}
		if top >= 0 {
			stack[top].next()
		}
	}
}

// ptrFrame is one open object or array while lineOfPointer walks a document.
type ptrFrame struct {
	array   bool
	index   int    // array: index of the next element
	key     string // object: key of the current member
	wantKey bool   // object: the next token is a key
}

// next moves the frame past one finished value.
func (f *ptrFrame) next() {
	if f.array {
		f.index++
	} else {
		f.wantKey = true
	}
}

// splitPointer splits an RFC 6901 JSON pointer into unescaped tokens.
// It returns an empty non-nil slice for the root and nil for a string that
// is not a pointer.
func splitPointer(ptr string) []string {
	if ptr == "" {
		return []string{}
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil
	}
	parts := strings.Split(ptr[1:], "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts
}

// escapeToken escapes one JSON pointer token (RFC 6901).
func escapeToken(tok string) string {
	if !strings.ContainsAny(tok, "~/") {
		return tok
	}
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}
