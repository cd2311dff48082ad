package grade

import (
	"io"
	"os"
	"testing"
)

// TestDecodeVerdict: only exactly {"pass": bool, "reason": string} is a
// verdict; a spelling encoding/json would forgive (a capital, a second
// pass key) is an error, never a pass.
func TestDecodeVerdict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, out string
		pass      bool
		reason    string
		err       string
	}{
		{name: "pass", out: `{"pass": true, "reason": "ok"}`, pass: true, reason: "ok"},
		{name: "fail without reason", out: "{\"pass\":false}\n"},
		{name: "capital key", out: `{"Pass":true}`, err: `unknown key "Pass" (keys are lowercase: pass, reason)`},
		{name: "upper case key", out: `{"PASS":true}`, err: `unknown key "PASS" (keys are lowercase: pass, reason)`},
		{name: "duplicate pass", out: `{"pass":true,"pass":false}`, err: `key "pass" appears twice`},
		{name: "duplicate pass, false first", out: `{"pass":false,"pass":true}`, err: `key "pass" appears twice`},
		{name: "duplicate reason", out: `{"pass":true,"reason":"a","reason":"b"}`, err: `key "reason" appears twice`},
		{name: "no pass", out: `{"reason":"forgot"}`, err: "no pass key"},
		{name: "pass as a string", out: `{"pass":"true"}`, err: `pass is "\"true\"", not true or false`},
		{name: "pass null", out: `{"pass":null}`, err: `pass is "null", not true or false`},
		{name: "pass as a number", out: `{"pass":1}`, err: `pass is "1", not true or false`},
		{name: "reason not a string", out: `{"pass":true,"reason":{"a":1}}`, err: `reason is "{\"a\":1}", not a string`},
		{name: "unknown key", out: `{"pass":true,"score":1}`, err: `unknown key "score"`},
		{name: "two objects", out: `{"pass":false}{"pass":true}`, err: "more than one JSON value"},
		{name: "an array", out: `[{"pass":true}]`, err: "not a JSON object"},
		{name: "nothing", out: ``, err: "EOF"},
		{name: "cut short", out: `{"pass":true`, err: "EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pass, reason, err := decodeVerdict([]byte(tc.out))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.err || (err == nil && (pass != tc.pass || reason != tc.reason)) {
				t.Errorf("got pass %v reason %q error %q; want %v %q %q", pass, reason, got, tc.pass, tc.reason, tc.err)
			}
			if err != nil && pass {
				t.Error("an error came with pass true")
			}
		})
	}
}

// TestCapWriterUnderIOCopy: os/exec copies a grader's pipe into its
// writer with io.Copy, which uses the writer's ReadFrom when it has one;
// the cap must hold under that copy, on the pipe itself, whatever the
// grader prints.
func TestCapWriterUnderIOCopy(t *testing.T) {
	t.Parallel()
	const max, printed = 1 << 20, 64 << 20
	for _, stop := range []bool{false, true} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			_, _ = io.Copy(w, io.LimitReader(zeros{}, printed))
			w.Close()
		}()
		cw := &capWriter{max: max}
		stopped := false
		if stop {
			cw.stop = func() { stopped = true }
		}
		n, err := io.Copy(cw, r)
		r.Close()
		if len(cw.buf) != max || cap(cw.buf) > 2*max || !cw.over {
			t.Errorf("stop %v: kept %d bytes (capacity %d), over %v; want %d, at most %d, true", stop, len(cw.buf), cap(cw.buf), cw.over, max, 2*max)
		}
		switch {
		case stop && (err != errOutputCap || !stopped || n > max):
			t.Errorf("with stop: copied %d, error %v, stopped %v; want at most %d, %v, true", n, err, stopped, max, errOutputCap)
		case !stop && (err != nil || n != printed):
			t.Errorf("without stop: copied %d, error %v; want %d drained, nil", n, err, printed)
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
