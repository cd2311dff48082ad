package openai

//lint:file-ignore SA1019 go-openai deprecates MaxTokens because OpenAI's reasoning models refuse it; the servers crab is mostly pointed at (vLLM, Ollama, llama.cpp's server, older OpenAI models) read max_tokens, and fitModel is where crab chooses between the two.

import goopenai "github.com/sashabaranov/go-openai"

// fitModel sets the output budget of c, built for every other field, and
// fits it to the model: maxTokens is sent as max_tokens, which every
// OpenAI-compatible server reads, unless go-openai's ReasoningValidator
// names c.Model a reasoning model (o1, o3, o4 and gpt-5 names, GPT-6 ids),
// which refuses max_tokens: then it is sent as max_completion_tokens. A
// temperature the reasoning model refuses (any but its fixed 1) is left
// out, so the server samples at its own.
func fitModel(c *goopenai.ChatCompletionRequest, maxTokens int) {
	c.MaxTokens = maxTokens
	v := goopenai.NewReasoningValidator()
	if v.Validate(*c) != nil && c.MaxTokens > 0 {
		c.MaxCompletionTokens, c.MaxTokens = c.MaxTokens, 0
	}
	if v.Validate(*c) != nil {
		c.Temperature = 0
	}
}
