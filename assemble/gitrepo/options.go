package gitrepo

import (
	"fmt"
	"strings"
	"time"

	"github.com/klauspost/compress/zlib"
)

// Defaults of the repository Builder writes: those of SPEC.md section 4,
// step 8.
const (
	// DefaultName and DefaultEmail are the identity of the model user,
	// the author and committer of the one commit.
	DefaultName  = "SSEBench Agent"
	DefaultEmail = "agent@ssebench.invalid"
	// DefaultMessage is the commit message, without its final newline.
	DefaultMessage = "buggy commit"
	// DefaultBranch is what `git init` of git 2.39 calls the initial
	// branch when no init.defaultBranch is configured, which is the case
	// for the model user.
	DefaultBranch = "master"
	// defaultCompression is the zlib level of the pack. Level 1 is git's
	// own choice for loose objects (core.looseCompression): the pack stays
	// small on disk while hashing, not compressing, dominates the time.
	defaultCompression = zlib.BestSpeed
)

// Option configures a Builder.
type Option func(*options) error

type options struct {
	when        time.Time
	name, email string
	branch      string
	message     string
	compression int
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{
		when:        time.Unix(0, 0),
		name:        DefaultName,
		email:       DefaultEmail,
		branch:      DefaultBranch,
		message:     DefaultMessage,
		compression: defaultCompression,
	}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// WithTime sets the author and committer time of the commit (recorded in
// whole seconds, time zone +0000) and the modification time of the tar
// entries. The default value is the Unix epoch, so that output stays
// deterministic when the caller has no better time.
func WithTime(t time.Time) Option {
	return func(o *options) error {
		if t.Unix() < 0 {
			return fmt.Errorf("commit time %s is before 1970: git cannot record it", t.UTC().Format(time.RFC3339))
		}
		o.when = t
		return nil
	}
}

// WithIdentity sets the author and committer. The default value is
// DefaultName and DefaultEmail.
func WithIdentity(name, email string) Option {
	return func(o *options) error {
		for _, v := range []string{name, email} {
			if v == "" || strings.ContainsAny(v, "<>\n\x00") || strings.TrimSpace(v) != v {
				return fmt.Errorf("identity %q <%s> cannot be written in a commit: no empty parts, angle brackets, newlines or surrounding spaces", name, email)
			}
		}
		o.name, o.email = name, email
		return nil
	}
}

// WithBranch sets the branch HEAD points to. The default value is
// DefaultBranch.
func WithBranch(branch string) Option {
	return func(o *options) error {
		if !validBranch(branch) {
			return fmt.Errorf("%q is not a valid branch name", branch)
		}
		o.branch = branch
		return nil
	}
}

// WithMessage sets the commit message; a final newline is added. The
// default value is DefaultMessage.
func WithMessage(msg string) Option {
	return func(o *options) error {
		if strings.TrimSpace(msg) == "" || strings.ContainsRune(msg, 0) {
			return fmt.Errorf("commit message %q is empty or holds a NUL byte", msg)
		}
		o.message = msg
		return nil
	}
}

// WithCompression sets the zlib level (0 to 9) of the objects in the pack.
// The default value is 1 (zlib.BestSpeed).
func WithCompression(level int) Option {
	return func(o *options) error {
		if level < zlib.NoCompression || level > zlib.BestCompression {
			return fmt.Errorf("compression level %d is not between 0 and 9", level)
		}
		o.compression = level
		return nil
	}
}

// validBranch is a conservative subset of git check-ref-format: components
// of printable ASCII without the characters git forbids, no "..", no
// component starting with "." or ending with ".lock", no "@{".
func validBranch(b string) bool {
	if b == "" || b == "@" || strings.Contains(b, "..") || strings.Contains(b, "@{") ||
		strings.HasSuffix(b, ".") {
		return false
	}
	for _, c := range strings.Split(b, "/") {
		if c == "" || c[0] == '.' || strings.HasSuffix(c, ".lock") {
			return false
		}
		for i := 0; i < len(c); i++ {
			ch := c[i]
			if ch <= ' ' || ch >= 0x7f || strings.IndexByte("~^:?*[\\", ch) >= 0 {
				return false
			}
		}
	}
	return true
}
