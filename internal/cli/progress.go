package cli

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// isTerminal reports whether w is a terminal: progress is drawn there
// only, so a pipe, a log file and the tests see nothing of it.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressCounter draws on w, when it is a terminal, how many of what have
// been done and how fast, for work whose total is not known beforehand
// (records read from files); add counts n more, done clears the line.
// Both do nothing when w is not a terminal.
func progressCounter(w io.Writer, what string) (add func(n int), done func()) {
	if !isTerminal(w) {
		return func(int) {}, func() {}
	}
	bar := progressbar.NewOptions(-1, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString(what),
		progressbar.OptionSetElapsedTime(true), progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSpinnerType(14), progressbar.OptionClearOnFinish())
	return func(n int) { _ = bar.Add(n) }, func() { _ = bar.Finish() }
}

// progressSpinner draws, when w is a terminal, a spinner with the time
// spent on a step that reports no count (reading and summarising records);
// the returned function stops and clears it.
func progressSpinner(w io.Writer, what string) (stop func()) {
	if !isTerminal(w) {
		return func() {}
	}
	bar := progressbar.NewOptions(-1, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
		progressbar.OptionSetElapsedTime(true), progressbar.OptionSpinnerType(14), progressbar.OptionClearOnFinish())
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				_ = bar.Finish()
				return
			case <-t.C:
				_ = bar.Add(0)
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
	}
}

// clearLineWriter writes to a terminal that shows a spinner: each write
// (a whole progress line) first clears the spinner's line, which the
// spinner draws again on its next tick.
type clearLineWriter struct{ w io.Writer }

func (c clearLineWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(c.w, "\r\x1b[K"); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
