package audit

import (
	"errors"
	"fmt"
)

// Defaults of the options.
const (
	// DefaultMaxFindings bounds the findings Patch returns: a patch that
	// trips a rule hundreds of times (a generated file, a vendored tree)
	// says what it is in its first findings, and result.json and the
	// reports stay small. The findings past it are counted in one last
	// finding (see Patch).
	DefaultMaxFindings = 200
	// defaultBufferSize is how much of a line is looked at at once: a
	// longer line is read in pieces of this size, so one huge line (a
	// minified file, a data blob) costs this much memory, not its length.
	defaultBufferSize = 64 << 10
	// minBufferSize keeps the start of every ordinary line in one piece:
	// whether a line is a comment and where a hunk header's numbers are
	// are read from its first piece.
	minBufferSize = 4 << 10
)

// Option configures Patch.
type Option func(*options) error

type options struct {
	protected   func(path string) bool
	dropped     []string
	maxFindings int
	bufferSize  int
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{
		maxFindings: DefaultMaxFindings,
		bufferSize:  defaultBufferSize,
	}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// WithProtected reports every path of the patch for which protected
// returns true (the task's protected paths: test files, test data,
// vendored code, ...) as a "protected path changed" finding. It is called
// once for each path of the patch, relative to the tree's root with
// slashes ("pkg/x_test.go"); a deleted file is given by its old path.
// The default is no protected path.
func WithProtected(protected func(path string) bool) Option {
	return func(o *options) error {
		if protected == nil {
			return errors.New("audit.WithProtected: the function is nil")
		}
		o.protected = protected
		return nil
	}
}

// WithDropped reports each of paths (result.json's dropped_paths: the
// changes to protected paths the grade reset) as a "protected path
// changed" finding, once, whether or not the patch names it. It adds to
// WithProtected; a path both name is reported once. The default is none.
func WithDropped(paths []string) Option {
	return func(o *options) error {
		o.dropped = append(o.dropped, paths...)
		return nil
	}
}

// WithMaxFindings sets how many findings Patch lists before it stops
// listing and counts the rest. n must be at least 1. The default value is
// DefaultMaxFindings (200).
func WithMaxFindings(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("audit.WithMaxFindings(%d): at least one finding must be listed", n)
		}
		o.maxFindings = n
		return nil
	}
}

// withBufferSize sets how much of a line is looked at at once (tests cut
// long lines at known places with it).
func withBufferSize(n int) Option {
	return func(o *options) error {
		if n < minBufferSize {
			return fmt.Errorf("withBufferSize(%d): at least %d", n, minBufferSize)
		}
		o.bufferSize = n
		return nil
	}
}
