package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// ExitInterrupted is the exit status after Ctrl-C or SIGTERM: 128 plus
// SIGINT, as shells report a command that an interrupt ended.
const ExitInterrupted = 130

// Main runs ssebench with args and returns its exit status: 0, the
// container's status after a run (ExitError), ExitInterrupted when ctx was
// cancelled (the signal of main), else 1. It prints the error itself, in
// one line and with registry upload tokens taken out.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return MainCommand(ctx, New(), args, stdout, stderr)
}

// MainCommand is Main with the root command given (its stdin set, say).
func MainCommand(ctx context.Context, root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	root.SilenceErrors = true
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	stop := startProfile(stderr)
	err := root.ExecuteContext(ctx)
	stop()
	if err == nil {
		return 0
	}
	var exit *ExitError
	if errors.As(err, &exit) {
		return exit.Code
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "ssebench: interrupted")
		return ExitInterrupted
	}
	msg := err.Error()
	if hint := remote.LoginHint(err); hint != "" {
		msg += "; " + hint
	}
	fmt.Fprintln(stderr, "Error:", Redact(remote.LoopbackMessage(msg)))
	return 1
}

// signedQuery is the query of a URL in an error: registries sign upload
// state into it (distribution's _state), which is a credential of sorts.
var signedQuery = regexp.MustCompile(`(https?://[^\s"?]+)\?[^\s"]*`)

// signedPath is the query of a registry path without its host, as dumped
// requests and Location headers show it.
var signedPath = regexp.MustCompile(`(/v2/[^\s"?]*)\?[^\s"]*`)

// Redact removes the query of every URL and registry path in msg.
func Redact(msg string) string {
	msg = signedQuery.ReplaceAllString(msg, "$1?…")
	return signedPath.ReplaceAllString(msg, "$1?…")
}
