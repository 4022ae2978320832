package agentimage

import (
	"errors"
	"time"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/oci"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// historyComment marks the history entries Assemble writes (BuildKit
// writes "buildkit.dockerfile.v0" in the same place).
const historyComment = "ssebench.agentimage.v0"

// Option configures Assemble.
type Option func(*options) error

type options struct {
	tempDir     string
	when        time.Time
	compression oci.Compression
	facts       *assemble.Facts
	view        *oci.View
	build       v1.Platform
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{compression: oci.Gzip, build: hostPlatform()}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// WithTempDir sets the directory for the new layers' spool files; pass a
// temporary directory of the store, so that writing the image renames
// rather than copies. It is required when the Dockerfile adds a layer
// (COPY, ADD or WORKDIR); a Dockerfile that only changes the config (the
// dummy agent) needs none.
func WithTempDir(dir string) Option {
	return func(o *options) error {
		if dir == "" {
			return errors.New("layer spool directory is empty")
		}
		o.tempDir = dir
		return nil
	}
}

// WithTime sets the time of the build: the image's creation time, the time
// of its history entries, and the modification time of the directories a
// layer creates or adds to. The default value is the tool image's creation
// time, so that the same inputs always give the same image; callers pass
// SOURCE_DATE_EPOCH here. Copied files keep their own times when these
// are older, and take this time when newer (BuildKit's rewrite-timestamp).
func WithTime(t time.Time) Option {
	return func(o *options) error {
		if t.IsZero() {
			return errors.New("build time must not be the zero time")
		}
		o.when = t.UTC().Truncate(time.Second)
		return nil
	}
}

// WithCompression sets the compression of the new layers. The default
// value is gzip.
func WithCompression(c oci.Compression) Option {
	return func(o *options) error {
		switch c {
		case oci.Gzip, oci.Zstd:
			o.compression = c
			return nil
		}
		return errors.New("unknown layer compression: use oci.Gzip or oci.Zstd")
	}
}

// WithFacts sets the layer facts cache through which the tool image's
// layers are indexed (only when a COPY, ADD or WORKDIR needs to look at
// its filesystem). The default is no cache.
func WithFacts(f *assemble.Facts) Option {
	return func(o *options) error { o.facts = f; return nil }
}

// WithLowerView gives the merged view of the tool image's layers, when the
// caller has it already (it just assembled the tool image), so that they
// are not indexed again. The view must be of the image passed to Assemble.
func WithLowerView(v *oci.View) Option {
	return func(o *options) error { o.view = v; return nil }
}

// WithBuildPlatform sets the platform of the BUILDPLATFORM, BUILDOS,
// BUILDARCH and BUILDVARIANT arguments. The default value is this
// machine's (GOOS/GOARCH), as buildkitd on the same machine reports it.
func WithBuildPlatform(p v1.Platform) Option {
	return func(o *options) error {
		if p.OS == "" || p.Architecture == "" {
			return errors.New("build platform needs an OS and an architecture")
		}
		o.build = p
		return nil
	}
}
