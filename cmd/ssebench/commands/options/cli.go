package options

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// ErrNoHome is the error of a command that needs an SSEBench home (datasets/,
// agents/) run where there is none.
var ErrNoHome = errors.New("no SSEBench home here; pass --home or run from a checkout")

// RequireHome returns the SSEBench home like HomeDir, but fails with
// ErrNoHome instead of falling back to the working directory when neither
// --home nor SSEBENCH_HOME is set and no parent of the working directory is
// a home: a command reading tasks or agents would otherwise look in the
// wrong folder and report them missing.
func (g *Global) RequireHome() (string, error) {
	if g.Home != "" || os.Getenv(HomeEnv) != "" {
		return g.HomeDir()
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the working directory: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if isHome(d) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", ErrNoHome
		}
	}
}

// Check validates the shared flags before a command does any work, so that
// a typo fails at once in one line rather than after a build.
func (g *Global) Check() error {
	if g.Pull != "" {
		if _, err := remote.ParsePullPolicy(g.Pull); err != nil {
			return fmt.Errorf("--pull: %w", err)
		}
	}
	if g.Quiet && g.Verbose {
		return errors.New("--quiet and --verbose contradict each other: pass one")
	}
	return nil
}

// notice prints msg to Notices.
func (g *Global) notice(msg string) { fmt.Fprintln(g.Notices, msg) }

// registryConfigured says whether --registry, SSEBENCH_REGISTRY or a .env
// names REGISTRY.
func (g *Global) registryConfigured() bool {
	return strings.TrimSpace(g.Registry) != "" || strings.TrimSpace(g.Lookup(naming.RegistryEnv)) != ""
}

// localOnlyHint ends the error of an image under the default REGISTRY
// that the store lacks while nothing configured REGISTRY: that registry
// is not asked (README, "The local store and registries").
var localOnlyHint = fmt.Sprintf("REGISTRY is not configured, so the default %s is not asked: build the image here, or pass --registry or set %s to pull from a registry (--pull=always asks the default one)", naming.DefaultRegistry, naming.RegistryEnv)

// Progress returns w, or io.Discard under --quiet: where progress (bars,
// build logs, periodic lines) goes.
func (g *Global) Progress(w io.Writer) io.Writer {
	if g.Quiet {
		return io.Discard
	}
	return w
}

// Seconds is a flag value holding whole seconds in *p that accepts a Go
// duration ("90m", "1h30m", "45s") or, as before durations were taken, a
// plain number of seconds ("600").
func Seconds(p *int) *SecondsValue { return (*SecondsValue)(p) }

// SecondsValue implements pflag.Value; see Seconds.
type SecondsValue int

// Set implements pflag.Value.
func (s *SecondsValue) Set(v string) error {
	v = strings.TrimSpace(v)
	if n, err := strconv.Atoi(v); err == nil {
		// A negative number is the command's to refuse, as before
		// durations were taken ("--timeout -1 is negative").
		*s = SecondsValue(n)
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is not a duration: pass e.g. 90m, 1h30m, 600s or 600 (seconds)", v)
	}
	if d < 0 {
		return fmt.Errorf("%q is negative: pass a duration such as 90m or 600s", v)
	}
	if d%time.Second != 0 {
		return fmt.Errorf("%q is not whole seconds: pass e.g. 90m or 600s", v)
	}
	*s = SecondsValue(d / time.Second)
	return nil
}

// String implements pflag.Value: "0" when unset (so that help shows no
// default), else the duration.
func (s *SecondsValue) String() string {
	if s == nil || *s == 0 {
		return "0"
	}
	if *s < 0 {
		return strconv.Itoa(int(*s))
	}
	return (time.Duration(*s) * time.Second).String()
}

// Type implements pflag.Value.
func (s *SecondsValue) Type() string { return "duration" }
