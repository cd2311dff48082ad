// Package openaiwire is the server side of the OpenAI chat completion
// wire format, shared by crab sim-server and crab serve: reading a chat
// completion request into go-openai's request type, and writing answers,
// server-sent event streams, model lists and errors as OpenAI's servers
// write them. The client side is model/openai.
package openaiwire
