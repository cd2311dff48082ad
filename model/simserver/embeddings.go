package simserver

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"

	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/model/embed"
)

// EmbeddingModel is the model name the server's /v1/embeddings answers
// under (any name is accepted and echoed).
const EmbeddingModel = "sim-embed"

// maxEmbedInputs bounds the texts of one embeddings call.
const maxEmbedInputs = 2048

// simEmbedder is the deterministic embedder behind /v1/embeddings: the
// built-in hashed embedder with its guard features, so that paraphrases
// of one request (rewordings, typos, greetings) are close and hard
// negatives (a negation, another number, amount or identifier, another
// product) are not.
var simEmbedder = func() *embed.Hashed {
	h, err := embed.NewHashed(embed.HashedConfig{Guards: true})
	if err != nil {
		panic(err)
	}
	return h
}()

// embeddingRequest is the body of POST /v1/embeddings.
type embeddingRequest struct {
	Input          json.RawMessage `json:"input"`
	Model          string          `json:"model"`
	EncodingFormat string          `json:"encoding_format"`
	User           string          `json:"user"`
	Dimensions     int             `json:"dimensions"`
}

type embeddingData struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

type embeddingResponse struct {
	Object string          `json:"object"`
	Data   []embeddingData `json:"data"`
	Model  string          `json:"model"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// serveEmbeddings answers /v1/embeddings: one vector per input text (a
// string or a list of strings), floats or base64 little-endian float32 as
// encoding_format asks.
func (s *Server) serveEmbeddings(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		openaiwire.WriteError(w, http.StatusMethodNotAllowed, openaiwire.ErrTypeInvalidRequest, "method_not_allowed", "", "use POST")
		return
	}
	texts, req, err := decodeEmbeddings(io.LimitReader(r.Body, s.cfg.MaxBodyBytes+1), s.cfg.MaxBodyBytes)
	if err != nil {
		openaiwire.WriteError(w, http.StatusBadRequest, openaiwire.ErrTypeInvalidRequest, "invalid_request", "input", err.Error())
		return
	}
	res := embeddingResponse{Object: "list", Model: req.Model}
	if res.Model == "" {
		res.Model = EmbeddingModel
	}
	for i, t := range texts {
		v := simEmbedder.Vector(t)
		var e any = v
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			e = base64.StdEncoding.EncodeToString(b)
		}
		res.Data = append(res.Data, embeddingData{Object: "embedding", Index: i, Embedding: e})
		res.Usage.PromptTokens += len(strings.Fields(t))
	}
	res.Usage.TotalTokens = res.Usage.PromptTokens
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(res)
}

// decodeEmbeddings reads and checks an embeddings body.
func decodeEmbeddings(body io.Reader, limit int64) ([]string, *embeddingRequest, error) {
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, nil, err
	}
	if int64(len(raw)) > limit {
		return nil, nil, errors.New("request body too large")
	}
	var req embeddingRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&req); err != nil {
		return nil, nil, errors.New("body is not a JSON embeddings request: " + err.Error())
	}
	switch req.EncodingFormat {
	case "", "float", "base64":
	default:
		return nil, nil, errors.New(`encoding_format must be "float" or "base64"`)
	}
	var texts []string
	var one string
	if err := json.Unmarshal(req.Input, &one); err == nil {
		texts = []string{one}
	} else if err := json.Unmarshal(req.Input, &texts); err != nil {
		return nil, nil, errors.New("input must be a string or a list of strings")
	}
	if len(texts) == 0 || len(texts) > maxEmbedInputs {
		return nil, nil, errors.New("input must hold 1 to 2048 texts")
	}
	return texts, &req, nil
}
