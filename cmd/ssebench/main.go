// Command ssebench builds, assembles, moves and runs the images of SSEBench.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/42-b3yond-6ug/ssebench/internal/commands"
	// Extensions: each registers its tool layer (--tool-layer NAME).
	_ "github.com/42-b3yond-6ug/ssebench/pipeline/examplelayer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := commands.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
