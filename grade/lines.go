package grade

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Protocols of a command grader (CommandConfig.Protocol).
const (
	// ProtocolOnce starts the program for every answer: one request on
	// stdin, one verdict on stdout, then it exits. The default.
	ProtocolOnce = "once"
	// ProtocolLines keeps one process per concurrent call, each reading
	// one request per line on stdin and writing one verdict per line on
	// stdout, for as long as it lives.
	ProtocolLines = "lines"
)

// idleExit is how long a line-protocol grader may wait for its next
// request before crab ends it: a run that has finished grading leaves no
// grader behind, and the next answer starts a fresh one.
const idleExit = 10 * time.Second

// lineWorker is one process of a line-protocol grader, started on first
// use and again after it crashed, timed out, broke the protocol or sat
// idle past idleExit.
type lineWorker struct {
	mu     sync.Mutex
	busy   bool
	seq    uint64 // the last request's id
	cmd    *exec.Cmd
	stop   context.CancelFunc // ends the process (its whole group or namespace)
	in     *os.File           // crab's end of its stdin
	outF   *os.File           // crab's end of its stdout
	out    *bufio.Reader
	stderr *capWriter
	exited chan struct{} // closed once Wait returned
	err    error         // what Wait returned
	idle   *time.Timer
}

// linePool hands out a command's workers, one per concurrent call.
type linePool struct {
	free   chan *lineWorker
	mu     sync.Mutex
	all    []*lineWorker
	closed bool
}

func newLinePool(n int) *linePool {
	p := &linePool{free: make(chan *lineWorker, n)}
	for range n {
		w := &lineWorker{}
		p.all = append(p.all, w)
		p.free <- w
	}
	return p
}

// Close ends every process a line-protocol grader keeps (nothing for a
// one-shot grader). Grading afterwards is an error. Idle processes end by
// themselves after a while; Close ends them now.
func (c *Command) Close() {
	p := c.pool
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	for _, w := range p.all {
		w.mu.Lock()
		if !w.busy { // a busy one ends when its grade returns
			w.shutdown()
		}
		w.mu.Unlock()
	}
}

func (c *Command) gradeLines(ctx context.Context, in Input, answer any) verdict {
	var w *lineWorker
	select {
	case w = <-c.pool.free:
	case <-ctx.Done():
		return verdict{err: "command: not run: " + ctx.Err().Error()}
	}
	defer func() { c.pool.free <- w }()
	c.pool.mu.Lock()
	closed := c.pool.closed
	c.pool.mu.Unlock()
	if closed {
		return verdict{err: "command: not run: the grader was closed"}
	}
	w.mu.Lock()
	w.seq++
	id := w.seq
	w.mu.Unlock()
	line, err := json.Marshal(struct {
		ID     uint64 `json:"id"`
		Task   any    `json:"task"`
		Answer any    `json:"answer"`
	}{id, in.Task, answer})
	if err != nil {
		return verdict{err: "command: cannot encode its input: " + err.Error()}
	}
	line = append(line, '\n') // encoding/json escapes every newline inside strings: one request is one line

	w.mu.Lock()
	w.busy = true
	if w.idle != nil {
		w.idle.Stop()
	}
	w.mu.Unlock()
	v, keep := c.exchange(ctx, w, line, strconv.FormatUint(id, 10))
	c.pool.mu.Lock()
	closed = c.pool.closed
	c.pool.mu.Unlock()
	w.mu.Lock()
	w.busy = false
	if !keep || closed {
		w.shutdown()
	} else if w.cmd != nil {
		w.armIdle()
	}
	w.mu.Unlock()
	return v
}

// exchange sends one request line to w's process, starting it when it is
// not running, and reads one verdict line back. keep is false when the
// process must not serve another request: it crashed, timed out, printed
// past its cap or out of turn.
func (c *Command) exchange(ctx context.Context, w *lineWorker, line []byte, id string) (v verdict, keep bool) {
	if w.cmd != nil && w.done() {
		w.shutdown() // it ended between two requests: not this answer's fault
	}
	if w.cmd == nil {
		if err := c.startWorker(w); err != nil {
			return verdict{err: "command: " + err.Error()}, false
		}
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	killed := context.AfterFunc(cctx, w.stop)
	_, werr := w.in.Write(line)
	var (
		got  []byte
		over bool
		rerr error
	)
	if werr == nil {
		got, over, rerr = readLine(w.out, maxCommandOutput)
	}
	// Unless stopping the kill here prevented it, the process was killed
	// (what it printed in the meantime is not trusted).
	alive := killed()
	switch {
	case !alive && ctx.Err() != nil:
		return verdict{err: "command: cancelled: " + ctx.Err().Error()}, false
	case !alive:
		return verdict{err: fmt.Sprintf("command: timed out after %s", c.timeout)}, false
	case over:
		return verdict{err: fmt.Sprintf("command: printed more than %d bytes on one line", maxCommandOutput)}, false
	case werr != nil || rerr != nil:
		return verdict{err: "command: " + w.exitMessage()}, false
	case w.out.Buffered() > 0:
		return verdict{err: "command: printed more than one line for one request (protocol lines: one verdict per line)"}, false
	}
	pass, reason, err := decodeVerdict(got, id)
	if err != nil {
		// Out of step (a stale line, a wrong id), the process is not trusted with another request.
		return verdict{err: fmt.Sprintf("command: printed %s, not {\"id\": %s, \"pass\": true|false, \"reason\": \"...\"}: %v", show(strings.TrimSpace(string(got))), id, err)}, false
	}
	return verdict{pass: pass, reason: reason}, true
}

// startWorker starts w's process in the same isolation, environment and
// process group as a one-shot grader.
func (c *Command) startWorker(w *lineWorker) error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return err
	}
	life, stop := context.WithCancel(context.Background())
	stderr := &capWriter{max: 4096}
	cmd, err := startKept(func() *exec.Cmd {
		cmd := exec.CommandContext(life, c.argv[0], c.argv[1:]...)
		cmd.Env = c.env
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, stderr
		cmd.WaitDelay = time.Second
		return cmd
	})
	inR.Close() // the child holds its own ends now
	outW.Close()
	if err != nil {
		stop()
		inW.Close()
		outR.Close()
		return fmt.Errorf("cannot start: %v", err)
	}
	w.cmd, w.stop, w.in, w.outF, w.stderr = cmd, stop, inW, outR, stderr
	w.out = bufio.NewReaderSize(outR, 64<<10)
	w.exited = make(chan struct{})
	go func(exited chan struct{}) {
		w.err = cmd.Wait()
		killGroup(cmd) // nothing it started outlives it
		close(exited)
	}(w.exited)
	return nil
}

// done reports whether w's process has exited.
func (w *lineWorker) done() bool {
	select {
	case <-w.exited:
		return true
	default:
		return false
	}
}

// exitMessage says how w's process ended, after a failed exchange: its
// exit status and the first line of its stderr.
func (w *lineWorker) exitMessage() string {
	select {
	case <-w.exited:
	case <-time.After(2 * time.Second):
		return "stopped answering (its stdout closed while it kept running)"
	}
	msg := "exited before answering"
	var ee *exec.ExitError
	switch {
	case errors.As(w.err, &ee):
		msg += ": " + ee.ProcessState.String()
	case w.err != nil:
		msg += ": " + w.err.Error()
	default:
		msg += " (exit status 0)"
	}
	if s := firstLine(string(w.stderr.buf)); s != "" {
		msg += ": " + s
	}
	return msg
}

// shutdown ends w's process, if any, and waits for it; w.mu is held.
func (w *lineWorker) shutdown() {
	if w.idle != nil {
		w.idle.Stop()
	}
	if w.cmd == nil {
		return
	}
	w.in.Close()
	w.stop()
	<-w.exited
	w.outF.Close()
	w.cmd, w.in, w.outF, w.out = nil, nil, nil, nil
}

// armIdle ends w's process once it has waited idleExit for a request;
// w.mu is held.
func (w *lineWorker) armIdle() {
	if w.idle == nil {
		w.idle = time.AfterFunc(idleExit, func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if !w.busy {
				w.shutdown()
			}
		})
		return
	}
	w.idle.Reset(idleExit)
}

// readLine reads one line (without its newline) of at most max bytes;
// over reports a longer one, of which the rest is left unread.
func readLine(r *bufio.Reader, max int) (line []byte, over bool, err error) {
	for {
		frag, err := r.ReadSlice('\n')
		if len(line)+len(frag) > max+1 {
			return nil, true, nil
		}
		line = append(line, frag...)
		switch {
		case err == nil:
			return line[:len(line)-1], false, nil
		case err != bufio.ErrBufferFull:
			if err == io.EOF && len(line) > 0 {
				err = io.ErrUnexpectedEOF // a last line without its newline: the process ended
			}
			return nil, false, err
		}
	}
}
