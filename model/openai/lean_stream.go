package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crab-testbed/crab/internal/jsonw"
	"github.com/crab-testbed/crab/model"
)

// streamLean makes a streaming call for req without go-openai (see
// leanSend): the events are read as go-openai's stream reader reads them
// (eventReader) and each chunk is decoded by decodeChunk. The answer's
// body is bounded by body as headerDoer bounds go-openai's.
func (b *Backend) streamLean(ctx context.Context, req *model.Request, creq *goopenai.ChatCompletionRequest, extra []model.Param,
	resp *model.Response, start time.Time, body *answerBody) (handled bool, err error) {
	res, handled, err := b.leanSend(ctx, req, creq, extra)
	if res == nil {
		return handled, err
	}
	defer res.Body.Close()
	resp.Confidence = confidence(res.Header)
	body.r, body.c, body.max, body.stream = res.Body, res.Body, b.cfg.MaxAnswerBytes, true
	br := streamReaders.Get().(*bufio.Reader)
	br.Reset(body)
	defer func() {
		br.Reset(nil)
		streamReaders.Put(br)
	}()
	ev := eventReader{r: br, limit: b.lean.emptyLimit}
	var as assembly
	var ch streamChunk
	for {
		data, err := ev.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return true, statusError(err)
		}
		if err := decodeChunk(data, &ch); err != nil {
			return true, err
		}
		if err := as.add(b, &ch, resp, start, body); err != nil {
			return true, err
		}
	}
	return true, as.end(resp)
}

// streamReaders hold the line buffers of streamed answers, of go-openai's
// size.
var streamReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

// eventReader reads the events of a stream exactly as go-openai's stream
// reader does (stream_reader.go's processLines), without its regular
// expressions: each line is trimmed of white space; a line that is not a
// data: event is kept for the error it may have to report and counted, up
// to limit in a row; a data: event of an error object ends the stream
// with that error once one more line is read; data: [DONE] ends it; the
// end of the body ends it with the kept lines' error, if they make one.
type eventReader struct {
	r     *bufio.Reader
	limit uint
	kept  []byte // every line that was not an event, trimmed, as go-openai's error accumulator keeps them
	long  []byte // a line longer than the reader's buffer, assembled
	done  bool
}

// next returns the data of the next event, or io.EOF after [DONE]. The
// data is valid until the next call.
func (e *eventReader) next() ([]byte, error) {
	if e.done {
		return nil, io.EOF
	}
	var empty uint
	failed := false
	for {
		line, readErr := e.line()
		if readErr != nil || failed {
			if err := e.apiError(); err != nil {
				return nil, fmt.Errorf("error, %w", err)
			}
			return nil, readErr
		}
		line = bytes.TrimSpace(line)
		data, isData := eventData(line)
		if isData && bytes.HasPrefix(data, []byte(`{"error":`)) {
			failed = true
		}
		if !isData || failed {
			if failed {
				line = data
			}
			e.kept = append(e.kept, line...)
			empty++
			if empty > e.limit {
				return nil, goopenai.ErrTooManyEmptyStreamMessages
			}
			continue
		}
		if string(data) == "[DONE]" {
			e.done = true
			return nil, io.EOF
		}
		return data, nil
	}
}

// line reads one line with its newline, as bufio.Reader.ReadBytes does;
// a last line without a newline comes with the error that ended it.
func (e *eventReader) line() ([]byte, error) {
	line, err := e.r.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	e.long = append(e.long[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = e.r.ReadSlice('\n')
		e.long = append(e.long, line...)
	}
	return e.long, err
}

// apiError is the error the kept lines make, as go-openai's stream reader
// reads them: an OpenAI error object; nil for anything else.
func (e *eventReader) apiError() *goopenai.APIError {
	if len(e.kept) == 0 {
		return nil
	}
	var er *goopenai.ErrorResponse
	if json.Unmarshal(e.kept, &er) != nil || er == nil {
		return nil
	}
	return er.Error
}

// eventData returns what follows "data:" and the white space after it
// (go-openai's ^data:\s*, whose \s is [\t\n\f\r ]), and whether line is a
// data: event at all.
func eventData(line []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return nil, false
	}
	for len(rest) > 0 {
		switch rest[0] {
		case '\t', '\n', '\f', '\r', ' ':
			rest = rest[1:]
			continue
		}
		break
	}
	return rest, true
}

// decodeChunk decodes one event's data as go-openai does (json.Unmarshal
// into goopenai.ChatCompletionStreamResponse) into c. Chunks of the
// common shape are read by a lean scanner; anything else (see
// decodeCompletion) is decoded by go-openai's own types, so the result and
// any error are exactly go-openai's.
func decodeChunk(data []byte, c *streamChunk) error {
	if scanChunk(data, c) {
		return nil
	}
	var out goopenai.ChatCompletionStreamResponse
	if err := json.Unmarshal(data, &out); err != nil {
		c.reset()
		return err
	}
	chunkOf(&out, c)
	return nil
}

// scanChunk is the lean reading of decodeChunk; false when the chunk is
// outside the shape it accepts.
func scanChunk(data []byte, c *streamChunk) bool {
	c.reset()
	s := answerScanner{jsonw.NewBytes(data, jsonw.PlainKeys)}
	var seen uint16
	ok := s.Object(func(key string) bool {
		var bit uint16
		var good bool
		switch key {
		case "id":
			bit, good = 1<<0, s.skipString()
		case "object":
			bit, good = 1<<1, s.skipString()
		case "created":
			bit, good = 1<<2, s.skipInt()
		case "model":
			bit, good = 1<<3, s.skipString()
		case "choices":
			bit, good = 1<<4, s.chunkChoices(c)
		case "usage":
			bit = 1 << 5
			if s.Null() {
				good = true
				break
			}
			var u answerFields
			if good = s.usage(&u); good {
				c.hasUsage, c.promptTokens, c.completionTokens = true, u.PromptTokens, u.CompletionTokens
			}
		case "system_fingerprint":
			bit, good = 1<<6, s.skipString()
		// Not fields of go-openai's chunk: ignored whatever their
		// (well-formed) value, as encoding/json ignores them.
		case "service_tier":
			bit, good = 1<<7, s.Skip(64)
		case "obfuscation":
			bit, good = 1<<8, s.Skip(64)
		default:
			return false
		}
		return jsonw.Once(&seen, bit) && good
	})
	if !ok || !s.End() {
		c.reset()
		return false
	}
	return true
}

// chunkChoices reads null or an array of chunk choices; those of index 0
// add their delta to c.
func (s *answerScanner) chunkChoices(c *streamChunk) bool {
	if s.Null() {
		return true
	}
	return s.Array(func() bool {
		var d streamDelta
		var index int
		var seen uint8
		ok := s.Object(func(key string) bool {
			var bit uint8
			var good bool
			switch key {
			case "index":
				bit = 1 << 0
				index, good = s.integer(index)
			case "delta":
				bit, good = 1<<1, s.delta(&d)
			case "finish_reason":
				var f string
				bit = 1 << 2
				f, good = s.str()
				d.finish = goopenai.FinishReason(f)
			case "logprobs":
				bit, good = 1<<3, s.Null()
			default:
				return false
			}
			return jsonw.Once(&seen, bit) && good
		})
		if ok && index == 0 {
			c.deltas = append(c.deltas, d)
		}
		return ok
	})
}

// delta reads null or a delta object with plain string fields (function
// or tool calls are go-openai's).
func (s *answerScanner) delta(d *streamDelta) bool {
	if s.Null() {
		return true
	}
	var seen uint8
	return s.Object(func(key string) bool {
		var bit uint8
		var good bool
		switch key {
		case "role":
			bit, good = 1<<0, s.skipString()
		case "content":
			bit = 1 << 1
			d.content, good = s.str()
		case "refusal":
			bit = 1 << 2
			d.refusal, good = s.str()
		case "reasoning_content":
			bit, good = 1<<3, s.skipString()
		default:
			return false
		}
		return jsonw.Once(&seen, bit) && good
	})
}
