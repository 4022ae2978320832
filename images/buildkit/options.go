package buildkit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// DefaultAddress is where scripts/setup.sh starts buildkitd: the daemon's own
// default socket when it runs as root.
const DefaultAddress = "unix:///run/buildkit/buildkitd.sock"

// EnvHost names the environment variable that overrides DefaultAddress. It is
// the variable buildctl reads too, so one setting serves both.
const EnvHost = "BUILDKIT_HOST"

// defaultConnectTimeout bounds the reachability check that New makes. A local
// daemon answers ListWorkers in milliseconds; a missing one should be
// reported while the user is still looking at the terminal.
const defaultConnectTimeout = 5 * time.Second

// ProgressMode selects how build progress is shown.
type ProgressMode string

const (
	// ProgressAuto shows the interactive display on a terminal and plain
	// text otherwise.
	ProgressAuto ProgressMode = "auto"
	// ProgressPlain prints one line per event, for logs and CI.
	ProgressPlain ProgressMode = "plain"
	// ProgressTTY requires a terminal and fails the build without one.
	ProgressTTY ProgressMode = "tty"
	// ProgressQuiet shows nothing.
	ProgressQuiet ProgressMode = "quiet"
)

// Option configures a Client.
type Option func(*options) error

type options struct {
	address        string
	getenv         func(string) string
	progress       io.Writer
	progressMode   ProgressMode
	connectTimeout time.Duration
	tempDir        string
	plainHTTP      func(host string) bool

	// solver replaces the daemon connection in unit tests.
	solver solver
}

// WithAddress sets the address of buildkitd, for example
// "unix:///run/buildkit/buildkitd.sock" or "tcp://127.0.0.1:1234".
// The default value is the environment variable BUILDKIT_HOST when it is set,
// else DefaultAddress.
func WithAddress(addr string) Option {
	return func(o *options) error {
		if addr == "" {
			return errors.New("buildkit address is empty")
		}
		o.address = addr
		return nil
	}
}

// WithProgress sets where BuildKit's progress display is written.
// The default value is os.Stderr.
func WithProgress(w io.Writer) Option {
	return func(o *options) error {
		if w == nil {
			return errors.New("progress writer is nil (use io.Discard or ProgressQuiet to hide progress)")
		}
		o.progress = w
		return nil
	}
}

// WithProgressMode sets how progress is displayed.
// The default value is ProgressAuto.
func WithProgressMode(mode ProgressMode) Option {
	return func(o *options) error {
		switch mode {
		case ProgressAuto, ProgressPlain, ProgressTTY, ProgressQuiet:
			o.progressMode = mode
			return nil
		}
		return fmt.Errorf("unknown progress mode %q (want auto, plain, tty or quiet)", mode)
	}
}

// WithConnectTimeout bounds the check, made by New, that buildkitd answers.
// The default value is 5 seconds.
func WithConnectTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("connect timeout must be positive, got %s", d)
		}
		o.connectTimeout = d
		return nil
	}
}

// WithTempDir sets the directory in which Build creates the OCI layout
// directory of each result. The default value is os.TempDir().
func WithTempDir(dir string) Option {
	return func(o *options) error {
		if dir == "" {
			return errors.New("temporary directory is empty")
		}
		o.tempDir = dir
		return nil
	}
}

// withGetenv replaces os.Getenv in tests of the address resolution.
func withGetenv(getenv func(string) string) Option {
	return func(o *options) error {
		o.getenv = getenv
		return nil
	}
}

// withSolver replaces the daemon connection, so unit tests run without one.
func withSolver(s solver) Option {
	return func(o *options) error {
		o.solver = s
		return nil
	}
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{
		getenv:         os.Getenv,
		progress:       os.Stderr,
		progressMode:   ProgressAuto,
		connectTimeout: defaultConnectTimeout,
	}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if o.address == "" {
		o.address = resolveAddress(o.getenv)
	}
	return o, nil
}

// resolveAddress picks BUILDKIT_HOST when set, else DefaultAddress.
func resolveAddress(getenv func(string) string) string {
	if v := getenv(EnvHost); v != "" {
		return v
	}
	return DefaultAddress
}

// WithPlainHTTP says which registries BuildKit pushes to over plain HTTP
// (registry.insecure on the image exporter): the same policy as the rest
// of ssebench (remote.Access.PlainHTTP). Loopback hosts always are.
func WithPlainHTTP(f func(host string) bool) Option {
	return func(o *options) error {
		o.plainHTTP = f
		return nil
	}
}
