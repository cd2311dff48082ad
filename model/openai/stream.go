package openai

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crab-testbed/crab/model"
)

// stream makes a streaming call through go-openai and reassembles the
// answer.
func (b *Backend) stream(ctx context.Context, creq goopenai.ChatCompletionRequest, resp *model.Response, start time.Time) error {
	st, err := b.client.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return statusError(err)
	}
	defer st.Close()
	resp.Confidence = confidence(st.Header())
	a, _ := ctx.Value(answerKey{}).(*answerBody)
	var as assembly
	var ch streamChunk
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return statusError(err)
		}
		chunkOf(&chunk, &ch)
		if err := as.add(b, &ch, resp, start, a); err != nil {
			return err
		}
	}
	return as.end(resp)
}

// streamChunk is what a Backend reads from one chunk of a stream: the
// usage report, when the chunk has one, and the deltas of the choices of
// index 0, in order.
type streamChunk struct {
	hasUsage                       bool
	promptTokens, completionTokens int
	deltas                         []streamDelta
}

type streamDelta struct {
	content, refusal string
	finish           goopenai.FinishReason
}

func (c *streamChunk) reset() {
	c.hasUsage, c.promptTokens, c.completionTokens, c.deltas = false, 0, 0, c.deltas[:0]
}

// chunkOf picks the fields crab reads out of go-openai's decoded chunk.
func chunkOf(out *goopenai.ChatCompletionStreamResponse, c *streamChunk) {
	c.reset()
	if u := out.Usage; u != nil {
		c.hasUsage, c.promptTokens, c.completionTokens = true, u.PromptTokens, u.CompletionTokens
	}
	for i := range out.Choices {
		if ch := &out.Choices[i]; ch.Index == 0 {
			c.deltas = append(c.deltas, streamDelta{content: ch.Delta.Content, refusal: ch.Delta.Refusal, finish: ch.FinishReason})
		}
	}
}

// assembly reassembles a streamed answer chunk by chunk.
type assembly struct {
	content, refusal strings.Builder
	finish           goopenai.FinishReason
	usage            *[2]int
}

// add takes one chunk: the last usage report wins (some servers repeat it
// on every chunk), the first content or refusal is the first byte, and
// an answer over the limit ends the call (marked on a, when set).
func (as *assembly) add(b *Backend, ch *streamChunk, resp *model.Response, start time.Time, a *answerBody) error {
	if ch.hasUsage {
		as.usage = &[2]int{ch.promptTokens, ch.completionTokens}
	}
	for i := range ch.deltas {
		d := &ch.deltas[i]
		if d.content != "" || d.refusal != "" {
			if resp.Trace.FirstByteAt.IsZero() {
				at := b.now()
				resp.Trace.TTFT = at.Sub(start)
				resp.Trace.FirstByteAt = at
			}
			as.content.WriteString(d.content)
			as.refusal.WriteString(d.refusal)
			if int64(as.content.Len()+as.refusal.Len()) > b.cfg.MaxAnswerBytes {
				if a != nil {
					a.tooLarge.Store(true)
				}
				return ErrAnswerTooLarge
			}
		}
		if d.finish != "" && d.finish != goopenai.FinishReasonNull {
			as.finish = d.finish
		}
	}
	return nil
}

// end fills resp with the answer once the stream is over.
func (as *assembly) end(resp *model.Response) error {
	if as.finish == "" {
		// A stream cut by the server or the network ends like a finished
		// one; without a finish reason the answer is partial.
		return errors.New("stream ended before a finish reason (connection closed mid-stream)")
	}
	resp.Content = as.content.String()
	resp.FinishReason = finishReason(as.finish)
	if resp.Content == "" && as.refusal.Len() > 0 {
		resp.Content = as.refusal.String()
		resp.FinishReason = model.FinishRefusal
	}
	if as.usage != nil {
		resp.Usage = model.Usage{TokensIn: as.usage[0], TokensOut: as.usage[1]}
	}
	return nil
}
