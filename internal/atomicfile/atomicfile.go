// Package atomicfile writes a file through a temporary file in the same
// folder and a rename, so a reader sees the old file or the whole new one,
// never half of it.
package atomicfile

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
)

// Perm is the mode crab's output files get: readable by everyone, like any
// file a user would write by hand (os.CreateTemp alone would give 0600).
const Perm os.FileMode = 0o644

// Write calls write with a buffered writer on a temporary file beside path,
// then renames it to path with mode Perm. On any error the temporary file is
// removed and path is left as it was.
func Write(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(tmp)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Chmod(Perm)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
