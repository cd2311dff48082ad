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
	env     []string // the grader's whole environment (see CommandConfig.Env)
	envSpec []string // Env as the experiment wrote it, for Identity
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
	c.env, c.envSpec = graderEnv(cfg.Env), append([]string(nil), cfg.Env...)
	return c
}

// graderEnv is the whole environment of a grader: PATH, then each entry
// of spec, NAME=value as written or NAME with its value in crab's
// environment (left out when crab has none). Nothing else of crab's
// environment — model API keys, store passwords, tag secrets — reaches
// a grader unless the experiment names it.
func graderEnv(spec []string) []string {
	env := map[string]string{}
	order := []string{"PATH"}
	if v, ok := os.LookupEnv("PATH"); ok {
		env["PATH"] = v
	}
	for _, e := range spec {
		name, val, literal := strings.Cut(e, "=")
		if !literal {
			var ok bool
			if val, ok = os.LookupEnv(name); !ok {
				continue
			}
		}
		if _, seen := env[name]; !seen && name != "PATH" {
			order = append(order, name)
		}
		env[name] = val
	}
	out := make([]string, 0, len(env))
	for _, k := range order {
		if v, ok := env[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
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
	for _, e := range c.envSpec {
		fmt.Fprintf(h, "env %q\n", e)
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
	// Past its cap, stdout ends the grade at once (the grader is killed);
	// stderr, read for the first line of an error only, is drained.
	stdout := &capWriter{max: maxCommandOutput, stop: cancel}
	stderr := &capWriter{max: 4096}
	cmd, err := start(func() *exec.Cmd {
		cmd := exec.CommandContext(cctx, c.argv[0], c.argv[1:]...)
		cmd.Env = c.env
		cmd.Stdin = bytes.NewReader(stdin)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		cmd.WaitDelay = time.Second // a child that keeps the pipes open cannot hold the grade
		return cmd
	})
	if err == nil {
		err = cmd.Wait()
	}
	killGroup(cmd) // nothing it started outlives it
	switch {
	case stdout.over:
		return verdict{err: fmt.Sprintf("command: printed more than %d bytes", maxCommandOutput)}
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
		if s := firstLine(string(stderr.buf)); s != "" {
			msg += ": " + s
		}
		return verdict{err: "command: " + msg}
	}
	pass, reason, err := decodeVerdict(stdout.buf)
	if err != nil {
		return verdict{err: fmt.Sprintf("command: printed %s, not {\"pass\": true|false, \"reason\": \"...\"}: %v", show(strings.TrimSpace(string(stdout.buf))), err)}
	}
	return verdict{pass: pass, reason: reason}
}

// decodeVerdict reads what a grading command printed: one JSON object
// with a boolean "pass" and, optionally, a string "reason", nothing else.
// Keys match exactly and appear once: encoding/json would read "Pass" or
// "PASS" as pass and keep the last of two pass keys, so a grader could
// pass an answer by a spelling or a line it did not mean. Whatever is not
// exactly a verdict is an error, never a pass.
func decodeVerdict(out []byte) (pass bool, reason string, err error) {
	dec := json.NewDecoder(bytes.NewReader(out))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		if err == nil {
			err = errors.New("not a JSON object")
		}
		return false, "", err
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false, "", err
		}
		key := t.(string) // inside an object, the decoder yields only string keys here
		if seen[key] {
			return false, "", fmt.Errorf("key %q appears twice", key)
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return false, "", err
		}
		switch key {
		case "pass":
			switch string(raw) {
			case "true":
				pass = true
			case "false":
			default:
				return false, "", fmt.Errorf("pass is %s, not true or false", show(string(raw)))
			}
		case "reason":
			if len(raw) == 0 || raw[0] != '"' {
				return false, "", fmt.Errorf("reason is %s, not a string", show(string(raw)))
			}
			if err := json.Unmarshal(raw, &reason); err != nil {
				return false, "", err
			}
		default:
			if strings.EqualFold(key, "pass") || strings.EqualFold(key, "reason") {
				return false, "", fmt.Errorf("unknown key %q (keys are lowercase: pass, reason)", key)
			}
			return false, "", fmt.Errorf("unknown key %q", key)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return false, "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return false, "", errors.New("more than one JSON value")
	}
	if !seen["pass"] {
		return false, "", errors.New("no pass key")
	}
	return pass, reason, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return clip(s)
}

// capWriter keeps the first max bytes written. It has a Write method
// only: os/exec copies a grader's pipe with io.Copy, which would hand an
// io.ReaderFrom (a bytes.Buffer, or a type embedding one) the whole pipe
// and bypass any cap in Write. Past max, with stop set, a write fails —
// the copy ends, the grader's next write gets EPIPE — and stop kills the
// grader; without stop, the excess is read and dropped.
type capWriter struct {
	buf  []byte
	max  int
	over bool
	stop func()
}

func (w *capWriter) Write(p []byte) (int, error) {
	room := w.max - len(w.buf)
	if len(p) <= room {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	w.buf = append(w.buf, p[:max(room, 0)]...)
	w.over = true
	if w.stop != nil {
		w.stop()
		return 0, errOutputCap
	}
	return len(p), nil
}

var errOutputCap = errors.New("grade: command output over its cap")
