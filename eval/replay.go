package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model/replay"
	"github.com/crab-testbed/crab/stack"
)

// ReplaySource is what a manifest says about one replayed model: the
// recording it answered from and whether those answers were synthesised
// from an outcome table.
type ReplaySource struct {
	Model       string   `json:"model"`
	Recording   string   `json:"recording"`
	Hash        string   `json:"recording_hash"`
	Source      string   `json:"source"`
	Calls       int      `json:"calls"`
	Synthesised bool     `json:"synthesised,omitempty"`
	Estimated   []string `json:"estimated,omitempty"`
	Origin      string   `json:"origin,omitempty"`
}

// openRecordings opens the recording of every replay model, checks it
// against the experiment's contract and task set, and fills the models'
// RecordingHash. A recording of another contract, or one that lacks a
// task of the task set, is an *InputError naming the recording, its line
// and field, before any request is sent.
func (s *Setup) openRecordings() error {
	for i := range s.Exp.Models {
		ms := &s.Exp.Models[i]
		if ms.Backend != stack.BackendReplay {
			continue
		}
		path := ms.Recording
		if s.base != "" && !filepath.IsAbs(path) {
			path = filepath.Join(s.base, path)
		}
		c, ok := s.cassettes[ms.Name]
		if !ok {
			var err error
			if c, err = openCassette(path); err != nil {
				return err
			}
			if s.cassettes == nil {
				s.cassettes = map[string]*replay.Cassette{}
			}
			s.cassettes[ms.Name] = c
		}
		h := c.Header
		if h.ContractHash != s.contract.Hash() {
			return &records.InputError{File: path, Line: 1, Field: "contract_hash",
				Msg: fmt.Sprintf("recorded under contract %.12s, but %s is %.12s: a recording answers only the contract it was made under", h.ContractHash, s.ContractName, s.contract.Hash())}
		}
		if h.TasksHash != s.TasksHash {
			for _, t := range s.Tasks {
				if !c.HasTask(t.ID) {
					return &records.InputError{File: path, Line: 1, Field: "tasks_hash",
						Msg: fmt.Sprintf("recorded on another task set: task %s (%s line %d) has no call in it", t.ID, s.TasksName, t.Line())}
				}
			}
		}
		hash, err := fileHash(path)
		if err != nil {
			return &records.InputError{File: path, Msg: err.Error()}
		}
		ms.RecordingHash = hash
		s.replays = append(s.replays, ReplaySource{Model: ms.Name, Recording: path, Hash: hash, Source: h.Source, Calls: c.Calls(),
			Synthesised: h.Synthesised, Estimated: h.Estimated, Origin: h.Origin})
	}
	return nil
}

func openCassette(path string) (*replay.Cassette, error) {
	c, err := replay.Open(path)
	if err != nil {
		var fe *replay.FileError
		if errors.As(err, &fe) {
			return nil, &records.InputError{File: fe.File, Line: fe.Line, Field: fe.Field, Msg: fe.Msg}
		}
		return nil, err
	}
	return c, nil
}

func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Release drops what only the requests need, once a run's requests are
// done: the tasks and the open recordings (their files and indexes). A
// million tasks and a recording of a million calls hold about 200 MB,
// which summarising the run's records then has to itself. The setup
// sends no request after it; its experiment, manifest and summary
// options stay.
func (s *Setup) Release() {
	for _, c := range s.cassettes {
		c.Close()
	}
	rule := s.PassRule() // which counts the tasks with an expected answer
	s.passRule = &rule
	s.Tasks, s.expected = nil, func() map[string]map[string]any { return nil }
}

// Replays describes the replayed models (nil without any), for the
// manifest and the run's notes.
func (s *Setup) Replays() []ReplaySource { return s.replays }

// RecordingHeader is the header of a recording of this setup's calls.
func (s *Setup) RecordingHeader(origin string) replay.Header {
	return replay.Header{TasksHash: s.TasksHash, ContractHash: s.contract.Hash(), TaskCount: len(s.Tasks), Origin: origin}
}

// Record makes every later model call of the setup's backends (every arm,
// judge and outcome-table call) go into rec as well.
func (s *Setup) Record(rec *replay.Recorder) error {
	s.recorder = rec
	b, err := s.buildBackends()
	if err != nil {
		return err
	}
	s.backends = b
	return nil
}

// NotRecorded counts the records whose request (or a call it made) the
// recording could not answer.
func NotRecorded(recs []records.Record) int {
	n := 0
	for i := range recs {
		if strings.Contains(recs[i].Error, replay.ErrNotRecorded.Error()) {
			n++
		}
	}
	return n
}

// ReplayWarnings are what a report must say about a run that answered from
// recordings: how many requests a recording could not answer, and which
// models' answers were synthesised from an outcome table.
func (m *Manifest) ReplayWarnings() []string {
	var out []string
	if m.NotRecorded > 0 {
		out = append(out, fmt.Sprintf("%d requests asked a recording for a call it does not hold: each is an error record (\"replay: not recorded\") and counts as a failure", m.NotRecorded))
	}
	for _, r := range m.Replays {
		if r.Synthesised {
			out = append(out, fmt.Sprintf("model %s answered from %s, whose answers were synthesised from an outcome table: its passes and costs are the table's, its answers' text is crab's", r.Model, r.Recording))
		}
	}
	return out
}
