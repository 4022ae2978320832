// Command ssebench-example is the ssebench CLI with the example tool layer
// of package examples/toollayer linked in (`--tool-layer example`): what a
// build of the CLI with an extension of one's own looks like. The ssebench
// command itself links no example.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands"
	// Extensions: each registers its tool layer (--tool-layer NAME).
	_ "github.com/42-b3yond-6ug/ssebench/examples/toollayer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := commands.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
