package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/crab-testbed/crab/internal/redact"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// runFiles are the files crab run writes into a run directory.
var runFiles = []string{"records.jsonl", "manifest.json", "summary.json", "report.md", "report.txt", "report.html", recordingFile}

// prepareRunDir makes dir ready for a new run. A directory that already
// holds a run is refused (bad usage), so new records are never mixed with
// an old run's reports; with overwrite, that run's files are removed first.
func prepareRunDir(dir string, overwrite bool) error {
	if err := checkRunDir(dir); err != nil {
		return err
	}
	var held []string
	for _, name := range runFiles {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			held = append(held, name)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if len(held) > 0 && !overwrite {
		return badUsage("%s holds a run (%s): choose another -o DIR, or pass --overwrite to replace it", dir, strings.Join(held, ", "))
	}
	for _, name := range held {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return os.MkdirAll(dir, 0o755)
}

// checkRunDir refuses, as bad usage, a -o DIR that is not a directory or
// lies under a file; a missing one is fine (it is created).
func checkRunDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return badUsage("-o %s is a file, not a directory: choose a directory for the run", dir)
	case errors.Is(err, syscall.ENOTDIR):
		return badUsage("-o %s: a parent of it is a file, not a directory", dir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return badUsage("-o %s: %v", dir, pathErrOnly(err))
	}
	return nil
}

// pathErrOnly is the cause of a path error, without the operation and
// path that the message around it already names.
func pathErrOnly(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// writeFault words a failure to write the run's files, naming a full disk
// (or quota) as such.
func writeFault(file string, err error) string {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Sprintf("disk full while writing %s (%v): the records cover the requests written before it", file, pathErrOnly(err))
	}
	return fmt.Sprintf("cannot write %s (%v): the records cover the requests written before it", file, pathErrOnly(err))
}

// writeManifestFinal writes the final manifest; when the atomic write
// (a temporary file, then a rename) fails — as on a full disk — it writes
// over the manifest in place, whose blocks the truncation frees.
func writeManifestFinal(path string, m any, secrets *redact.Set) error {
	if err := writeMaskedJSON(path, m, secrets); err == nil {
		return nil
	}
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, werr := maskWriter(f, secrets).Write(append(raw, '\n'))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}
