package buildkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	bkclient "github.com/moby/buildkit/client"
	"github.com/moby/buildkit/exporter/containerimage/exptypes"
	"golang.org/x/sync/errgroup"
)

// Result is a built image. When it was written to an OCI layout directory,
// the caller should Close it to remove that directory once the image has been
// copied elsewhere.
type Result struct {
	// Digest is the digest of the image manifest.
	Digest v1.Hash
	// LayoutDir is the OCI image layout directory that holds the image,
	// created by Build and owned by the caller. It is empty when the image
	// was pushed.
	LayoutDir string
	// Pushed is the reference the image was pushed to, or empty.
	Pushed string
}

// Image returns the built image from Result.LayoutDir. It is valid until
// Close; it fails for an image that was pushed instead.
func (r *Result) Image() (v1.Image, error) {
	if r.LayoutDir == "" {
		return nil, fmt.Errorf("image %s was pushed to %s, not written to a layout", r.Digest, r.Pushed)
	}
	img, err := layout.Path(r.LayoutDir).Image(r.Digest)
	if err != nil {
		return nil, fmt.Errorf("reading built image: %w", err)
	}
	return img, nil
}

// Close removes the result's layout directory, if any. It may be called more
// than once.
func (r *Result) Close() error {
	if r.LayoutDir == "" {
		return nil
	}
	if err := os.RemoveAll(r.LayoutDir); err != nil {
		return fmt.Errorf("removing build output: %w", err)
	}
	return nil
}

// BuildError reports a build that buildkitd ran and that failed. Its message
// is one line naming the Dockerfile and the failure; BuildKit's full log has
// already been shown by the progress display. Err is the error BuildKit's
// Solve returned, for callers that want the details.
type BuildError struct {
	// Dockerfile is the path of the Dockerfile, as in the Request.
	Dockerfile string
	// Target is the stage that was built, or empty for the last one.
	Target string
	// Err is the underlying solve error.
	Err error
	// Output is the last lines the failing step printed (at most 5), if
	// it printed any: the reason a RUN failed, which Err does not hold.
	Output []string
}

// Error implements error.
func (e *BuildError) Error() string {
	what := fmt.Sprintf("building %q", e.Dockerfile)
	if e.Target != "" {
		what += fmt.Sprintf(" (target %q)", e.Target)
	}
	msg := what + ": " + oneLine(e.Err.Error())
	if len(e.Output) > 0 {
		msg += "; its last output: " + strings.Join(e.Output, " | ")
	}
	return msg
}

// Unwrap returns the solve error.
func (e *BuildError) Unwrap() error { return e.Err }

// oneLine turns BuildKit's error text into a single line: its client wraps
// every error as "failed to solve: …", which says nothing here, and some
// messages (Dockerfile parse errors, for one) span several lines.
func oneLine(msg string) string {
	var parts []string
	for l := range strings.Lines(msg) {
		l = strings.TrimPrefix(strings.TrimSpace(l), "failed to solve: ")
		if l != "" && !slices.Contains(parts, l) {
			parts = append(parts, l)
		}
	}
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			// A line ending in a colon introduces the next one.
			if strings.HasSuffix(parts[i-1], ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(p)
	}
	return b.String()
}

// Build builds req with the Dockerfile frontend and either writes the image to
// a fresh OCI layout directory (see Result.LayoutDir) or pushes it to
// req.Push. Progress goes to the client's progress writer while it runs.
//
// A request that is not valid fails before anything is sent to buildkitd.
// A build that fails returns a *BuildError.
func (c *Client) Build(ctx context.Context, req Request) (_ *Result, retErr error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	show, err := newDisplay(c.opts.progress, c.opts.progressMode)
	if err != nil {
		return nil, err
	}

	var layoutDir string
	if req.Push == "" {
		layoutDir, err = os.MkdirTemp(c.opts.tempDir, "ssebench-build-*")
		if err != nil {
			return nil, fmt.Errorf("creating build output directory: %w", err)
		}
		defer func() {
			if retErr != nil {
				os.RemoveAll(layoutDir)
			}
		}()
	}
	opt, err := newSolveOpt(req, layoutDir, c.opts.plainHTTP)
	if err != nil {
		return nil, err
	}

	// Solve closes ch when it returns; the tee passes each status on to
	// the display, keeping the steps' last output lines, and closes
	// shown, which ends the display. Both keep reading until then,
	// because Solve blocks on sending.
	ch, shown := make(chan *bkclient.SolveStatus), make(chan *bkclient.SolveStatus)
	tail := newLogTail()
	var resp *bkclient.SolveResponse
	eg, egctx := errgroup.WithContext(ctx)
	eg.Go(func() error {
		var err error
		resp, err = c.solver.Solve(egctx, nil, opt, ch)
		return err
	})
	eg.Go(func() error {
		defer close(shown)
		for s := range ch {
			tail.add(s)
			shown <- s
		}
		return nil
	})
	eg.Go(func() error { return show(shown) })
	if err := eg.Wait(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = errors.Join(ctxErr, err)
		}
		return nil, &BuildError{Dockerfile: req.dockerfilePath(), Target: req.Target, Err: err, Output: tail.failedOutput()}
	}

	raw := resp.ExporterResponse[exptypes.ExporterImageDigestKey]
	if raw == "" {
		return nil, fmt.Errorf("building %q: buildkitd reported no image digest", req.dockerfilePath())
	}
	dgst, err := v1.NewHash(raw)
	if err != nil {
		return nil, fmt.Errorf("building %q: buildkitd reported an invalid image digest: %w", req.dockerfilePath(), err)
	}
	return &Result{Digest: dgst, LayoutDir: layoutDir, Pushed: req.Push}, nil
}
