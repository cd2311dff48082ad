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

// stream makes a streaming call and reassembles the answer.
func (b *Backend) stream(ctx context.Context, creq goopenai.ChatCompletionRequest, resp *model.Response, start time.Time) error {
	st, err := b.client.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return statusError(err)
	}
	defer st.Close()
	resp.Confidence = confidence(st.Header())
	var content, refusal strings.Builder
	var finish goopenai.FinishReason
	var usage *goopenai.Usage
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return statusError(err)
		}
		if chunk.Usage != nil {
			u := *chunk.Usage
			usage = &u // the last report wins: some servers repeat it on every chunk
		}
		for _, c := range chunk.Choices {
			if c.Index != 0 {
				continue
			}
			if c.Delta.Content != "" || c.Delta.Refusal != "" {
				if resp.Trace.FirstByteAt.IsZero() {
					at := b.now()
					resp.Trace.TTFT = at.Sub(start)
					resp.Trace.FirstByteAt = at
				}
				content.WriteString(c.Delta.Content)
				refusal.WriteString(c.Delta.Refusal)
				if int64(content.Len()+refusal.Len()) > b.cfg.MaxAnswerBytes {
					if a, ok := ctx.Value(answerKey{}).(*answerBody); ok {
						a.tooLarge.Store(true)
					}
					return ErrAnswerTooLarge
				}
			}
			if c.FinishReason != "" && c.FinishReason != goopenai.FinishReasonNull {
				finish = c.FinishReason
			}
		}
	}
	if finish == "" {
		// A stream cut by the server or the network ends like a finished
		// one in go-openai; without a finish reason the answer is partial.
		return errors.New("stream ended before a finish reason (connection closed mid-stream)")
	}
	resp.Content = content.String()
	resp.FinishReason = finishReason(finish)
	if resp.Content == "" && refusal.Len() > 0 {
		resp.Content = refusal.String()
		resp.FinishReason = model.FinishRefusal
	}
	if usage != nil {
		resp.Usage = model.Usage{TokensIn: usage.PromptTokens, TokensOut: usage.CompletionTokens}
	}
	return nil
}
