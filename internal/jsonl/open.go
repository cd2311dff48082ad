package jsonl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is the error of a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens path for reading when it is a regular file (a link
// to one included), and refuses anything else before reading a byte: a
// device such as /dev/zero reads without end, a FIFO blocks until some
// writer comes, a folder is no input. It opens without blocking, so a
// FIFO is refused at once instead of hanging the open itself. The error
// is the cause alone (no path), for the caller's own file-naming error.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%w (a device, a FIFO or a socket)", ErrNotRegular)
		if st.IsDir() {
			err = fmt.Errorf("%w: a folder", ErrNotRegular)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
