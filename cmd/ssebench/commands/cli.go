package commands

import (
	"io"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/logs"
	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// needsHome names the commands that read datasets/ or agents/ of the
// SSEBench home. Outside a home they fail at once with options.ErrNoHome
// instead of looking in the working directory and reporting a task or agent
// as missing. "assemble tool" needs one only without --source, "mirror"
// only without --only-args or --all, and "tasks check" unless it is given
// only dataset folders and no --agents.
var needsHome = map[string]func(*cobra.Command) bool{
	"names":          always,
	"run":            always,
	"eval":           always,
	"grade":          always,
	"dataset verify": always,
	"tasks check":    tasksCheckNeedsHome,
	"assemble agent": always,
	"base-images":    always,
	"runtime build":  always,
	"assemble tool":  func(c *cobra.Command) bool { return !c.Flags().Changed("source") },
	"mirror":         func(c *cobra.Command) bool { return !c.Flags().Changed("only-args") && !c.Flags().Changed("all") },
}

func always(*cobra.Command) bool { return true }

// tasksCheckNeedsHome: `tasks check` reads the home's datasets unless every
// argument is a dataset folder, and its agents with --agents.
func tasksCheckNeedsHome(c *cobra.Command) bool {
	args := c.Flags().Args()
	if len(args) == 0 || c.Flags().Changed("agents") {
		return true
	}
	for _, a := range args {
		if st, err := os.Stat(filepath.Join(a, task.DatasetFile)); err != nil || st.IsDir() {
			return true
		}
	}
	return false
}

// preRun runs before every command: it checks the shared flags, the home
// when the command needs one, and points the libraries' logs at stderr
// under -v (and nowhere otherwise).
func preRun(cmd *cobra.Command, g *options.Global) error {
	setLogs(cmd.ErrOrStderr(), g.Verbose)
	if !g.Quiet {
		g.Notices = cmd.ErrOrStderr()
	}
	if err := g.Check(); err != nil {
		return err
	}
	path := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	if need := needsHome[path]; need != nil && need(cmd) {
		if _, err := g.RequireHome(); err != nil {
			return err
		}
	}
	return nil
}

// setLogs sends the registry request log (one line per request and per
// answer, remote.SetRequestLog), go-containerregistry's warnings and those
// of containerd and BuildKit (logrus) to w when verbose, through Redact;
// else it silences them. go-containerregistry's own request logger
// (logs.Debug) stays off: it prints a loopback registry's URL as https
// before the transport sends it over HTTP, and dumps headers. It is set on
// every run, since a process may run several commands (the tests do).
func setLogs(w io.Writer, verbose bool) {
	logs.Debug.SetOutput(io.Discard)
	if !verbose {
		remote.SetRequestLog(nil)
		logs.Progress.SetOutput(io.Discard)
		logs.Warn.SetOutput(io.Discard)
		// containerd's and BuildKit's libraries log through logrus;
		// their warnings (no fsverity here, say) are noise unless asked
		// for.
		logrus.SetOutput(io.Discard)
		return
	}
	rw := &redactWriter{w: w}
	remote.SetRequestLog(log.New(rw, "registry: ", 0))
	logs.Progress = log.New(rw, "", 0)
	logs.Warn = log.New(rw, "warning: ", 0)
	logrus.SetOutput(rw)
}

// Header lines and token fields of a logged request or answer that carry a
// credential.
var (
	secretHeader = regexp.MustCompile(`(?im)^((?:proxy-)?authorization|cookie|set-cookie|x-registry-auth):.*$`)
	secretField  = regexp.MustCompile(`("(?:token|access_token|refresh_token|password|identitytoken)"\s*:\s*)"[^"]*"`)
)

// redactWriter removes credentials and signed upload state from what the
// libraries log, one Write (a log line or a dumped request) at a time.
type redactWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (r *redactWriter) Write(p []byte) (int, error) {
	s := Redact(string(p))
	s = secretHeader.ReplaceAllString(s, "$1: <redacted>")
	s = secretField.ReplaceAllString(s, `$1"<redacted>"`)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := io.WriteString(r.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}
