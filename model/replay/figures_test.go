package replay

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenRefusesBadFigures: a figure no call can have is refused as the
// recording is opened, naming the recording's line and field.
func TestOpenRefusesBadFigures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const header = `{"format":"crab.recording/v1"}` + "\n" + `{"model":"m","task_id":"a","cost":0.5}` + "\n"
	for _, tc := range []struct{ line, want string }{
		{`{"model":"m","task_id":"b","cost":-0.25}`, "rec.jsonl:3: cost: must not be negative, got -0.25"},
		{`{"model":"m","task_id":"b","tokens_in":-1}`, "rec.jsonl:3: tokens_in: must not be negative"},
		{`{"model":"m","task_id":"b","tokens_out":-7}`, "rec.jsonl:3: tokens_out: must not be negative"},
		{`{"model":"m","task_id":"b","ttft_ms":-1}`, "rec.jsonl:3: ttft_ms: must not be negative"},
		{`{"model":"m","task_id":"b","model_ms":-3}`, "rec.jsonl:3: model_ms: must not be negative"},
	} {
		p := filepath.Join(dir, "rec.jsonl")
		if err := os.WriteFile(p, []byte(header+tc.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(p)
		var fe *FileError
		if !errors.As(err, &fe) || !errors.Is(err, ErrRecording) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v; want a FileError saying %q", tc.line, err, tc.want)
		}
	}
}
