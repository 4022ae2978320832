package oci

import (
	"context"
	"io"
)

// ContextReader returns a reader of r that fails with ctx's error once ctx
// ends, so that a long copy (a layer into the store, a blob into an
// archive) stops between reads when its command is cancelled. It does not
// interrupt a read already blocked in r.
func ContextReader(ctx context.Context, r io.Reader) io.Reader {
	return &ctxReader{ctx: ctx, r: r}
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r *ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
