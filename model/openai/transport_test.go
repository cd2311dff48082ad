package openai

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// chunkReader reads b n bytes at a time.
type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[k:]
	return k, nil
}

// FuzzAnswerBody: whatever a stream holds and however it is cut into
// reads, the body never panics, and it fails exactly when a line, or the
// lines that are neither events nor blank, are over the limit.
func FuzzAnswerBody(f *testing.F) {
	f.Add([]byte("data: {}\n\n: comment\n\ndata: [DONE]\n\n"), uint8(3), uint8(16))
	f.Add([]byte("   data:x\n\t\nda\nta: y\n"), uint8(1), uint8(4))
	f.Add(bytes.Repeat([]byte("x"), 40), uint8(7), uint8(8))
	f.Fuzz(func(t *testing.T, b []byte, step, limit uint8) {
		a := &answerBody{r: &chunkReader{b: b, n: int(step) + 1}, c: io.NopCloser(nil), max: int64(limit), stream: true}
		_, err := io.ReadAll(io.LimitReader(a, int64(len(b))+1))
		if want := overStream(b, int64(limit)); errors.Is(err, ErrAnswerTooLarge) != want {
			t.Fatalf("%q limit %d: err %v; want too large %v", b, limit, err, want)
		}
	})
}

// overStream is what answerBody decides of a whole stream, line by line.
func overStream(b []byte, limit int64) bool {
	var kept int64
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines {
		if int64(len(l)) > limit {
			return true
		}
		if i == len(lines)-1 {
			break // not ended: neither kept nor dropped yet
		}
		t := bytes.TrimLeft(l, " \t\r")
		if len(t) > 0 && !bytes.HasPrefix(t, []byte("data:")) {
			if kept += int64(len(l)); kept > limit {
				return true
			}
		}
	}
	return false
}
