package grade

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// maxCommandOutput bounds what a grading command may print.
const maxCommandOutput = 1 << 20

// Command is the external-program grader (see CommandConfig).
type Command struct {
	argv    []string // as resolved by NewCommand
	written string   // the program as the experiment wrote it, for messages
	files   []string // the resolved program and script arguments that name files, for Identity
	timeout time.Duration
	sem     chan struct{}
}

// NewCommand returns the grader cfg describes; dir is the experiment's
// folder ("" for the working directory). The program and its arguments are
// resolved the way the experiment file reads, wherever crab runs:
//
//   - a program written with a slash (./grade.py, bin/grade) is a path
//     relative to dir, made absolute, and never searched on $PATH;
//   - a bare program name (python3, grade-answers) is searched on $PATH,
//     as a shell would;
//   - an argument that is a relative path naming an existing file in dir
//     (grade.py in run: [python3, grade.py]) is passed as that file's
//     absolute path; every other argument is passed as written.
//
// Check reports whether the program can be run.
func NewCommand(cfg CommandConfig, dir string) *Command {
	argv := append([]string(nil), cfg.Run...)
	c := &Command{written: argv[0]}
	if strings.ContainsRune(argv[0], '/') {
		argv[0] = absIn(dir, argv[0])
		c.files = append(c.files, argv[0])
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a == "" || strings.HasPrefix(a, "-") || filepath.IsAbs(a) {
			continue
		}
		p := absIn(dir, a)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			argv[i] = p
			c.files = append(c.files, p)
		}
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	n := cfg.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	c.argv, c.timeout, c.sem = argv, timeout, make(chan struct{}, n)
	return c
}

// absIn is p relative to dir, made absolute (p as given when that fails).
func absIn(dir, p string) string {
	if !filepath.IsAbs(p) && dir != "" {
		p = filepath.Join(dir, p)
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Argv is the program and arguments as resolved (see NewCommand).
func (c *Command) Argv() []string { return append([]string(nil), c.argv...) }

// Check reports why the program cannot be run — a path that does not
// exist, is not a file or is not executable, a bare name not on $PATH —
// or nil. It runs nothing.
func (c *Command) Check() error {
	prog := c.argv[0]
	if !strings.ContainsRune(c.written, '/') {
		if _, err := exec.LookPath(prog); err != nil {
			return fmt.Errorf("program %q is not on $PATH (a program in the experiment's folder is written with a slash: ./%s)", prog, prog)
		}
		return nil
	}
	st, err := os.Stat(prog)
	switch {
	case err != nil:
		return fmt.Errorf("program %s (%s, relative to the experiment file's folder) cannot be run: %v", c.written, prog, pathErr(err))
	case !st.Mode().IsRegular():
		return fmt.Errorf("program %s (%s) is not a file", c.written, prog)
	case st.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("program %s (%s) is not executable: chmod +x it, or run it through its interpreter, e.g. [python3, %s]", c.written, prog, c.written)
	}
	return nil
}

func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Identity names what the grader runs: the resolved program and
// arguments, and the SHA-256 of every file among them (the program when it
// is a path, script arguments), so that editing a grading script changes
// it. A file that cannot be read is named as unreadable.
func (c *Command) Identity() string {
	h := sha256.New()
	for _, a := range c.argv {
		fmt.Fprintf(h, "arg %q\n", a)
	}
	prog := c.argv[0]
	if !strings.ContainsRune(c.written, '/') {
		if p, err := exec.LookPath(prog); err == nil {
			prog = p
		}
	}
	files := append([]string{prog}, c.files...)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(h, "file %q unreadable\n", f)
			continue
		}
		fmt.Fprintf(h, "file %q %x\n", f, sha256.Sum256(raw))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// commandVerdict is what a grading command prints.
type commandVerdict struct {
	Pass   *bool  `json:"pass"`
	Reason string `json:"reason"`
}

func (c *Command) grade(ctx context.Context, in Input, answer any) verdict {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return verdict{err: "command: not run: " + ctx.Err().Error()}
	}
	defer func() { <-c.sem }()
	stdin, err := json.Marshal(struct {
		Task   any `json:"task"`
		Answer any `json:"answer"`
	}{in.Task, answer})
	if err != nil {
		return verdict{err: "command: cannot encode its input: " + err.Error()}
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, c.argv[0], c.argv[1:]...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = maxCommandOutput, 4096
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second // a child that keeps the pipes open cannot hold the grade
	ownGroup(cmd)               // a timeout or cancellation kills the grader's children too
	err = cmd.Run()
	killGroup(cmd) // and nothing it started outlives it
	switch {
	case cctx.Err() == context.DeadlineExceeded:
		return verdict{err: fmt.Sprintf("command: timed out after %s", c.timeout)}
	case ctx.Err() != nil:
		return verdict{err: "command: cancelled: " + ctx.Err().Error()}
	case err != nil:
		msg := err.Error()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg = ee.ProcessState.String()
		}
		if s := firstLine(stderr.String()); s != "" {
			msg += ": " + s
		}
		return verdict{err: "command: " + msg}
	case stdout.over:
		return verdict{err: fmt.Sprintf("command: printed more than %d bytes", maxCommandOutput)}
	}
	var v commandVerdict
	dec := json.NewDecoder(strings.NewReader(stdout.String()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return verdict{err: fmt.Sprintf("command: printed %s, not {\"pass\": true|false, \"reason\": \"...\"}: %v", show(strings.TrimSpace(stdout.String())), err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return verdict{err: "command: printed more than one JSON object"}
	}
	if v.Pass == nil {
		return verdict{err: "command: printed no pass field"}
	}
	return verdict{pass: *v.Pass, reason: v.Reason}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return clip(s)
}

// limitedBuffer keeps the first max bytes written and notes any more.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
