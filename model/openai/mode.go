package openai

import (
	"strings"

	"github.com/crab-testbed/crab/model"
)

// Instructions appended to the system prompt for the shortened output
// modes when a request sets none (model.DefaultInstruction), so that a
// real model is asked for the shorter answer (the output is not trimmed
// afterwards). Full mode adds nothing.
const (
	InstructionShort     = model.DefaultInstructionShort
	InstructionOverShort = model.DefaultInstructionOverShort
)

// ModeInstruction is the default instruction a Backend appends to the
// system prompt for mode, or "" for the full mode; a request's own
// Instruction replaces it.
func ModeInstruction(mode string) string { return model.DefaultInstruction(mode) }

// SplitMode undoes what a Backend did to the system prompt with a default
// instruction: it returns the prompt without a trailing default mode
// instruction, and the mode that instruction asks for (model.ModeFull when
// there is none). Servers use it to see the caller's own system prompt and
// the output mode asked for; a request's own instruction is not
// recognised (the X-Crab-Mode header still names the mode).
func SplitMode(system string) (base, mode string) {
	for _, m := range [...]string{model.ModeShort, model.ModeOverShort} {
		ins := ModeInstruction(m)
		if rest, ok := strings.CutSuffix(system, ins); ok {
			return strings.TrimSuffix(rest, "\n\n"), m
		}
	}
	return system, model.ModeFull
}
