// Command ssebench builds, assembles, moves and runs the images of SSEBench.
// The cobra commands live in the commands package beside this file; main
// only wires signals to the context and turns the result into an exit code.
package main

import (
	"context"
	"os"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands"
)

func main() {
	// The first Ctrl-C (or SIGTERM) cancels the context; a second one
	// ends the process at once.
	ctx, stop := commands.SignalContext(context.Background())
	code := commands.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
