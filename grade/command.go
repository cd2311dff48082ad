package grade

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// maxCommandOutput bounds what a grading command may print.
const maxCommandOutput = 1 << 20

// Command is the external-program grader (see CommandConfig).
type Command struct {
	argv    []string
	timeout time.Duration
	sem     chan struct{}
}

// NewCommand returns the grader cfg describes; dir is the experiment's
// folder, against which a program path with a slash is resolved.
func NewCommand(cfg CommandConfig, dir string) *Command {
	argv := append([]string(nil), cfg.Run...)
	if strings.ContainsRune(argv[0], '/') && !filepath.IsAbs(argv[0]) && dir != "" {
		argv[0] = filepath.Join(dir, argv[0])
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	n := cfg.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	return &Command{argv: argv, timeout: timeout, sem: make(chan struct{}, n)}
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
	err = cmd.Run()
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
