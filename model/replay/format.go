// Package replay keeps the answers of model calls in a recording (a
// "cassette") and answers later calls from it, so that every arm of an
// experiment — caches, routers, cascades, shortened modes — can be judged
// again on a real model's answers without calling that model.
//
// A recording is a JSONL file. Its first line is a Header: the format, the
// task set and contract it was made under, and where its answers came
// from. Every further line is an Entry: one model call, with the answer,
// its usage and its timings, keyed on what decides the answer (see Key).
// Headers and API keys never enter it: a Recorder sees only the request
// and the response a backend returned.
//
// A Cassette reads a recording through an index of line offsets (40 bytes
// per call), not by loading it, and a Backend answers from it. A call the
// recording lacks is an error wrapping ErrNotRecorded, never a silent
// fallback to another backend.
package replay

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"math"

	"github.com/cespare/xxhash/v2"

	"github.com/crab-testbed/crab/model"
)

// Format names the recording file format; it changes when what a line
// means changes, so an old recording is refused instead of misread.
const Format = "crab.recording/v1"

// Sources of a recording's answers (Header.Source).
const (
	SourceRun    = "run"    // recorded from the model calls of a crab run or crab tune
	SourceImport = "import" // built from an outcome table by crab recording import
)

// ErrNotRecorded is the error of a call the recording has no answer for.
var ErrNotRecorded = errors.New("replay: not recorded")

// ErrRecording is wrapped by every fault of a recording file.
var ErrRecording = errors.New("replay: bad recording")

// Header is the first line of a recording.
type Header struct {
	Format string `json:"format"`
	Source string `json:"source"` // SourceRun or SourceImport
	// TasksHash and ContractHash are the task file's and the contract's
	// sha256 the answers were made under; a replay under another contract
	// is refused, and one on another task set must find every task in
	// the recording.
	TasksHash    string `json:"tasks_hash"`
	ContractHash string `json:"contract_hash"`
	TaskCount    int    `json:"task_count,omitempty"`
	// Synthesised says the answers were built from outcomes (correct or
	// not), not recorded from a model: the expected value for a correct
	// one, a valid wrong one derived from the contract otherwise.
	Synthesised bool `json:"synthesised,omitempty"`
	// Estimated lists what an import filled in by estimate (tokens_in,
	// tokens_out) because the table did not hold it.
	Estimated []string `json:"estimated,omitempty"`
	// Origin says where the answers came from (a run id, a table's file
	// name and its attribution).
	Origin  string `json:"origin,omitempty"`
	Created string `json:"created,omitempty"`
}

// Error kinds an Entry records, so that a replayed failure is retried
// (or not) exactly as the recorded one was.
const (
	KindBackend      = "backend"       // wraps model.ErrBackend (Status, when set, is its HTTP status)
	KindMalformed    = "malformed"     // wraps model.ErrMalformed
	KindUnknownModel = "unknown_model" // wraps model.ErrUnknownModel
	KindHang         = "hang"          // the call ended with its context (a deadline or a cancellation)
	KindOther        = "other"
)

// Entry is one recorded model call. Model, Key, TaskID, Seed and Attempt
// identify it; the rest is what the call returned.
type Entry struct {
	Model   string `json:"model"`
	Key     string `json:"key,omitempty"` // Key of the request; "" for an imported outcome (any request of the task)
	TaskID  string `json:"task_id"`
	Seed    int64  `json:"seed,omitempty"`
	Attempt int    `json:"attempt,omitempty"`

	Content      string  `json:"content,omitempty"`
	Finish       string  `json:"finish,omitempty"`
	Confidence   float64 `json:"confidence,omitempty"`
	TokensIn     int     `json:"tokens_in"`
	TokensOut    int     `json:"tokens_out"`
	Cost         float64 `json:"cost"`
	Unpriced     bool    `json:"unpriced,omitempty"` // the call's model had no declared price: Cost is unknown (model.Usage.Unpriced)
	TTFTMs       float64 `json:"ttft_ms"`
	ModelMs      float64 `json:"model_ms"`
	Error        string  `json:"error,omitempty"`
	ErrorKind    string  `json:"error_kind,omitempty"`
	Status       int     `json:"status,omitempty"`
	RetryAfterMs float64 `json:"retry_after_ms,omitempty"`
	// Correct is an imported outcome's correctness as the table states
	// it (nil for a recorded call).
	Correct *bool `json:"correct,omitempty"`
}

// Key is the hex hash of everything in a request that decides a model's
// answer: the messages (system prompt with the output mode's instruction,
// history, text), the output mode, the output budget, the temperature and
// the contract's hash. The model's name, the task id, the seed and the
// attempt identify a call beside it; scope, user and headers are left
// out (a model answers the text it is sent).
func Key(req *model.Request) string {
	var d xxhash.Digest
	d.Reset()
	str := func(s string) { num(&d, uint64(len(s))); d.WriteString(s) }
	str(req.System)
	str(req.ModeInstruction())
	num(&d, uint64(len(req.History)))
	for _, m := range req.History {
		str(m.Role)
		str(m.Content)
	}
	str(req.Text)
	mode := req.Mode
	if mode == "" {
		mode = model.ModeFull
	}
	str(mode)
	num(&d, uint64(req.MaxTokens))
	num(&d, math.Float64bits(req.Temperature))
	str(req.ContractHash)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], d.Sum64())
	return hex.EncodeToString(b[:])
}

func num(h hash.Hash64, x uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], x)
	h.Write(b[:])
}

// hashOf is the 64-bit hash the index sorts calls on.
func hashOf(parts ...string) uint64 {
	var d xxhash.Digest
	d.Reset()
	for _, p := range parts {
		num(&d, uint64(len(p)))
		d.WriteString(p)
	}
	return d.Sum64()
}
