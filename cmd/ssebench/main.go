// Command ssebench builds, assembles, moves and runs the images of SSEBench.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/42-b3yond-6ug/ssebench/internal/commands"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := commands.New().ExecuteContext(ctx); err != nil {
		// After a run, ssebench exits with the container's status.
		var exit *commands.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.Code)
		}
		os.Exit(1)
	}
}
