package infile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestClean(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in  string
		maxLine   int
		want      string // cleaned text, when no error
		line      int
		field     string
		errSubstr string
	}{
		{name: "bom dropped", in: "\xef\xbb\xbfa,b\n1,2\n", want: "a,b\n1,2\n"},
		{name: "json field", in: "{\"ttfts\": [0.1],\n \"errors\": [\"\", \"bad \xff\"]}", line: 2, field: "errors[1]", errSubstr: "not valid UTF-8"},
		{name: "json nested", in: `[{"request_id":"a","metadata":{"status":"ok"}},{"request_id":"b","metadata":{"status":"x` + "\xc3" + `"}}]`, line: 1, field: "[1].metadata.status", errSubstr: "byte 0xc3"},
		{name: "json key", in: "{\"a\":1,\"b\xff\":2}", line: 1, field: "b\ufffd", errSubstr: "UTF-8"},
		{name: "jsonl line", in: "{\"a\":\"ok\"}\n{\"a\":1,\"text\":\"x\xfe\"}\n", line: 2, field: "text", errSubstr: "UTF-8"},
		{name: "csv column", in: "id,body,tenant\n1,fine,t\n2,\"caf\xe9\",t\n", line: 3, field: "body", errSubstr: "UTF-8"},
		{name: "csv quoted newline", in: "id,body,tenant\n1,\"two\nlines\",t\xe9\n", line: 3, field: "tenant", errSubstr: "UTF-8"},
		{name: "lone surrogate", in: `{"generated_texts": ["ok", "bad \ud800 here"], "errors": ["", ""]}`, line: 1, field: "generated_texts[1]", errSubstr: "lone UTF-16 surrogate"},
		{name: "surrogate pair", in: `{"t": ["\ud83d\ude00 \\ud800"]}`, want: `{"t": ["\ud83d\ude00 \\ud800"]}`},
		{name: "long line", in: "a\n" + strings.Repeat("x", 40) + "\n", maxLine: 32, line: 2, errSubstr: "a line of 40 bytes"},
		{name: "long last line", in: "a\n" + strings.Repeat("x", 40), maxLine: 32, line: 2, errSubstr: "a line of 40 bytes"},
		{name: "line at the bound", in: "a\n" + strings.Repeat("x", 32) + "\n", maxLine: 32, line: 2, errSubstr: "a line of 32 bytes"},
		{name: "lines within", in: "a\n" + strings.Repeat("x", 31) + "\n", maxLine: 32, want: "a\n" + strings.Repeat("x", 31) + "\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := Clean([]byte(c.in), "f.txt", Options{MaxLine: c.maxLine})
			if c.errSubstr == "" {
				if err != nil || string(got) != c.want {
					t.Fatalf("got %q, %v; want %q", got, err, c.want)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.File != "f.txt" || e.Line != c.line || e.Field != c.field || !strings.Contains(e.Msg, c.errSubstr) {
				t.Fatalf("got %v (%+v); want f.txt line %d field %q containing %q", err, e, c.line, c.field, c.errSubstr)
			}
		})
	}
}

func TestReadRegularFilesOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(strings.Repeat(" ", 2048)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, want string
		o          Options
	}{
		{fifo, "not a regular file", Options{}},
		{dir, "not a regular file: a folder", Options{}},
		{"/dev/zero", "not a regular file", Options{}},
		{big, "larger than", Options{MaxSize: 1024}},
		{filepath.Join(dir, "none"), "cannot read", Options{}},
	} {
		_, name, err := Read(c.path, nil, c.o)
		if err == nil || name != c.path || !strings.Contains(err.Error(), c.path+": "+c.want) {
			t.Errorf("Read(%s): got %v (name %q); want an error naming the file: %s", c.path, err, name, c.want)
		}
	}
	_, _, err := Read("-", strings.NewReader(strings.Repeat("x", 2048)), Options{MaxSize: 1024})
	if err == nil || !strings.Contains(err.Error(), Stdin+": larger than") {
		t.Errorf("stdin over the bound: got %v", err)
	}
}

func FuzzFieldAt(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"x"}]}`), 12)
	f.Add([]byte("a,b\n1,2\n"), 6)
	f.Fuzz(func(t *testing.T, data []byte, off int) {
		if off < 0 || off >= len(data) {
			return
		}
		_ = FieldAt(data, off) // must not panic
	})
}

func FuzzClean(f *testing.F) {
	f.Add([]byte(`{"a": ["\ud800", "\ud83d\ude00", "\\ud800"]}`), 8)
	f.Add([]byte("a,b\n1,\xff\n"), 0)
	f.Fuzz(func(t *testing.T, data []byte, maxLine int) {
		out, err := Clean(data, "f", Options{MaxLine: maxLine % 64})
		if err == nil && len(out) > len(data) {
			t.Fatalf("Clean grew its input")
		}
	})
}
