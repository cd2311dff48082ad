package records

import (
	"errors"
	"os"

	"github.com/crab-testbed/crab/internal/infile"
	"github.com/crab-testbed/crab/internal/inputerr"
)

// InputError is bad input: it names the file, line and field at fault.
// Commands turn it into exit code 2.
type InputError struct {
	File  string
	Line  int // 1-based; 0 when the fault is not tied to a line
	Field string
	Msg   string
}

func (e *InputError) Error() string {
	return inputerr.Format(e.File, e.Line, e.Field, e.Msg)
}

// ErrBadInput matches every *InputError with errors.Is.
var ErrBadInput = errors.New("crab: bad input")

// Is reports ErrBadInput.
func (e *InputError) Is(target error) bool { return target == ErrBadInput }

// JSONLineError turns a decoding error of one JSON line into an InputError
// naming the field.
func JSONLineError(name string, line int, err error) error {
	field, msg := inputerr.JSONField(err)
	return &InputError{File: name, Line: line, Field: field, Msg: msg}
}

// errText drops the path an *os.PathError repeats, since InputError names it.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// FileError turns a file the import reader refused (an *infile.Error)
// into an InputError; any other error is returned as it is.
func FileError(err error) error {
	var fe *infile.Error
	if errors.As(err, &fe) {
		return &InputError{File: fe.File, Line: fe.Line, Field: fe.Field, Msg: fe.Msg}
	}
	return err
}

// notUTF8 is the error for a line of name that is not valid UTF-8, naming
// the field that holds the first bad byte: text is kept as it is, never
// replaced, so a file that is not UTF-8 is refused as every importer
// refuses it.
func notUTF8(name string, line int, raw []byte) error {
	_, err := infile.Clean(raw, name, infile.Options{})
	var fe *infile.Error
	if errors.As(err, &fe) {
		return &InputError{File: name, Line: line, Field: fe.Field, Msg: fe.Msg}
	}
	return &InputError{File: name, Line: line, Msg: "not valid UTF-8"}
}
