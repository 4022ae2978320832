package commands

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// SignalContext returns a context that ends at the first SIGINT or SIGTERM,
// for main to run ssebench under. From that signal on the two signals have
// their default action again: a command stops at its next look at the
// context (between entries, between reads), and a second Ctrl-C ends the
// process at once, whatever it is blocked in (an open of a FIFO, a read
// that no context reaches). Call stop when the command is done.
func SignalContext(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	ctx, stop = signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		// Only the first signal is the command's: NotifyContext would
		// swallow every later one until the command returned.
		stop()
	}()
	return ctx, stop
}
