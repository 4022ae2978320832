package oci

import (
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Compression is the compression of a layer written by LayerWriter.
type Compression int

const (
	// Gzip compresses layers with gzip at a fixed level, with no file name
	// and a zero time in the gzip header. Media type
	// application/vnd.oci.image.layer.v1.tar+gzip.
	Gzip Compression = iota + 1
	// Zstd compresses layers with zstd using a single-threaded encoder.
	// Media type application/vnd.oci.image.layer.v1.tar+zstd. Older
	// runtimes (Docker before 23.0) cannot pull such layers.
	Zstd
)

// String returns "gzip" or "zstd".
func (c Compression) String() string {
	switch c {
	case Gzip:
		return "gzip"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// MediaType returns the OCI layer media type for the compression.
func (c Compression) MediaType() types.MediaType {
	switch c {
	case Zstd:
		return types.OCILayerZStd
	}
	return types.OCILayer
}

const (
	// defaultCompression is gzip because every runtime and registry accepts
	// it; zstd is opt-in.
	defaultCompression = Gzip
)

// defaultTime is the modification time given to entries whose header has
// none: the Unix epoch, which is also what BuildKit and containerd write for
// whiteouts. SOURCE_DATE_EPOCH, when wanted, is the caller's business:
// pass it with WithDefaultTime.
var defaultTime = time.Unix(0, 0).UTC()

// Option configures NewLayerWriter and WriteLayer.
type Option func(*options) error

type options struct {
	compression Compression
	gzipLevel   int
	defaultTime time.Time
}

func makeOptions(opts ...Option) (options, error) {
	o := options{
		compression: defaultCompression,
		gzipLevel:   gzipLevel,
		defaultTime: defaultTime,
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return options{}, err
		}
	}
	return o, nil
}

// WithCompression selects the layer compression, Gzip or Zstd.
// The default value is Gzip.
func WithCompression(c Compression) Option {
	return func(o *options) error {
		switch c {
		case Gzip, Zstd:
			o.compression = c
			return nil
		}
		return fmt.Errorf("unknown layer compression %v: use oci.Gzip or oci.Zstd", c)
	}
}

// WithGzipLevel sets the gzip level (1, fastest, to 9, smallest) of a
// Gzip layer; the default is gzip's default level, as BuildKit and
// containerd compress. The compressed bytes, and so the layer's digest,
// depend on the level, so a writer that wants the same digests tomorrow
// passes a fixed one.
func WithGzipLevel(level int) Option {
	return func(o *options) error {
		if level < 1 || level > 9 {
			return fmt.Errorf("gzip level %d: want 1 (fastest) to 9 (smallest)", level)
		}
		o.gzipLevel = level
		return nil
	}
}

// WithDefaultTime sets the modification time written for entries whose
// header has a zero ModTime. The time is truncated to whole seconds, like
// every time the writer emits. The default value is the Unix epoch
// (1970-01-01T00:00:00Z).
func WithDefaultTime(t time.Time) Option {
	return func(o *options) error {
		if t.IsZero() {
			return fmt.Errorf("default layer time must not be the zero time")
		}
		o.defaultTime = t.Truncate(time.Second).UTC()
		return nil
	}
}
