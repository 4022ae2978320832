package assemble

import (
	"errors"
	"fmt"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"path"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// ToolOption configures Tool.
type ToolOption func(*toolOptions) error

type toolOptions struct {
	sourceDir   string // clean, relative to the root
	tempDir     string
	facts       *Facts
	when        time.Time
	compression oci.Compression
	caseRef     string
	runtimeRef  string
	previous    v1.Image
	phase       func(string)
	entrypoint  string // the image's ENTRYPOINT; runtimebin.Entrypoint unless sidecar
}

// WithPhases makes Tool tell fn when it starts each long step (reading the
// case layers, copying the source tree, writing the repository, sealing),
// e.g. "reading 12 case layers (3.1 GiB)": on a big case image the user
// then sees what the minutes go to.
func WithPhases(fn func(phase string)) ToolOption {
	return func(o *toolOptions) error {
		o.phase = fn
		return nil
	}
}

func (o *toolOptions) phasef(format string, args ...any) {
	if o.phase != nil {
		o.phase(fmt.Sprintf(format, args...))
	}
}

func makeToolOptions(opts ...ToolOption) (*toolOptions, error) {
	o := &toolOptions{compression: oci.Gzip, caseRef: "the case image", runtimeRef: "the runtime image", entrypoint: runtimebin.Entrypoint}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if o.sourceDir == "" {
		return nil, errors.New("no SOURCE_DIR: see assemble.WithSourceDir")
	}
	if o.tempDir == "" {
		return nil, errors.New("no directory for layer spool files: see assemble.WithTempDir")
	}
	return o, nil
}

// WithSourceDir sets SOURCE_DIR, the absolute path of the project tree in
// the case image (the task config's `source`). It is required.
func WithSourceDir(dir string) ToolOption {
	return func(o *toolOptions) error {
		if !path.IsAbs(dir) {
			return fmt.Errorf("SOURCE_DIR %q is not absolute: set `source` in the task's config.yaml to an absolute path such as /src/project", dir)
		}
		c := strings.TrimPrefix(path.Clean(dir), "/")
		if c == "" {
			return fmt.Errorf("SOURCE_DIR %q is the root: set `source` in the task's config.yaml to the project's folder", dir)
		}
		// The tool layer rewrites these paths; a source tree on or around
		// them would be overwritten or would move them into /ssebench-repo.
		for _, managed := range []string{"ssebench", "ssebench-repo", "var/lib/ssebench", "home/model", "etc"} {
			if c == managed || strings.HasPrefix(managed, c+"/") || strings.HasPrefix(c, managed+"/") {
				return fmt.Errorf("SOURCE_DIR %q overlaps /%s, which the tool layer manages: move the project elsewhere, such as /src/project", dir, managed)
			}
		}
		// And the rest of what dataset validate refuses (/usr, /proc, ...).
		if r := task.ReservedSource("/" + c); r != "" {
			return fmt.Errorf("SOURCE_DIR %q %s: SOURCE_DIR is given to model, so move the project elsewhere, such as /src/project", dir, r)
		}
		o.sourceDir = c
		return nil
	}
}

// WithTempDir sets the directory for the new layers' spool files; pass a
// temporary directory of the store, so that writing the image renames
// rather than copies. It is required.
func WithTempDir(dir string) ToolOption {
	return func(o *toolOptions) error { o.tempDir = dir; return nil }
}

// WithFacts sets the layer facts cache. The default is no cache.
func WithFacts(f *Facts) ToolOption {
	return func(o *toolOptions) error { o.facts = f; return nil }
}

// WithTime sets the time of the build: the commit time of the new
// repository, the modification time of new entries, the day of the account
// files' password-change fields and the image's creation time. The default
// value is the case image's creation time, so that the same case image
// always gives the same tool image; callers pass SOURCE_DATE_EPOCH here.
func WithTime(t time.Time) ToolOption {
	return func(o *toolOptions) error { o.when = t.UTC().Truncate(time.Second); return nil }
}

// WithCompression sets the compression of the new layers. The default value
// is gzip.
func WithCompression(c oci.Compression) ToolOption {
	return func(o *toolOptions) error { o.compression = c; return nil }
}

// WithRefs names the case and runtime images in error messages.
func WithRefs(caseRef, runtimeRef string) ToolOption {
	return func(o *toolOptions) error {
		if caseRef != "" {
			o.caseRef = caseRef
		}
		if runtimeRef != "" {
			o.runtimeRef = runtimeRef
		}
		return nil
	}
}

// WithPrevious offers the tool image assembled before for the same task.
// When it was made from the same case image, SOURCE_DIR, time and assembler
// version (its manifest records a key of those), Tool takes its system,
// repo and source layers as they are, reading no case layer: a runtime
// change then costs the runtime layers and a manifest. The default is none.
func WithPrevious(img v1.Image) ToolOption {
	return func(o *toolOptions) error { o.previous = img; return nil }
}
