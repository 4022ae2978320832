package buildkit

import (
	"context"
	"fmt"
	"io"

	bkclient "github.com/moby/buildkit/client"
	"github.com/moby/buildkit/util/progress/progressui"
)

// newDisplay returns the function that shows a build's progress with
// BuildKit's own display. It is created before the build starts, so that a
// display that cannot work (ProgressTTY without a terminal) fails the call
// instead of blocking the solve.
func newDisplay(w io.Writer, mode ProgressMode) (func(chan *bkclient.SolveStatus) error, error) {
	d, err := progressui.NewDisplay(w, progressui.DisplayMode(mode))
	if err != nil {
		return nil, fmt.Errorf("starting progress display: %w", err)
	}
	return func(ch chan *bkclient.SolveStatus) error {
		// The display must drain ch until Solve closes it, so it gets a
		// context that is never cancelled (as buildctl does).
		_, err := d.UpdateFrom(context.Background(), ch)
		for range ch {
		}
		return err
	}, nil
}
