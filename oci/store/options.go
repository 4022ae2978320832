package store

import (
	"context"
	"errors"
)

// Option configures a Store (see Open).
type Option func(*options) error

type options struct {
	ctx      context.Context
	fetcher  Fetcher
	readOnly bool
}

// makeOptions applies opts over the defaults, refusing invalid values.
func makeOptions(opts ...Option) (options, error) {
	o := options{ctx: context.Background()}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return options{}, err
		}
	}
	return o, nil
}

// WithContext sets the context of the work Open does (waiting for the
// store's lock while another command creates it) and of the registry
// fetches done later by reads that take no context of their own (Blob,
// ReadBlob, and the layers of ImageAt and IndexAt, which implement
// go-containerregistry interfaces without one): like go-containerregistry's
// remote.WithContext, the store keeps ctx for them, so cancelling it stops
// those fetches. Methods that take a context use theirs. The default is
// context.Background().
func WithContext(ctx context.Context) Option {
	return func(o *options) error {
		if ctx == nil {
			return errors.New("store.WithContext: the context is nil")
		}
		o.ctx = ctx
		return nil
	}
}

// WithFetcher lets the store fetch the blobs it recorded without their
// bytes when they are read. Without one, reading such a blob fails with
// ErrCorruptBlob, naming the repository it can be pulled from.
func WithFetcher(f Fetcher) Option {
	return func(o *options) error {
		if f == nil {
			return errors.New("store.WithFetcher: the Fetcher is nil")
		}
		o.fetcher = f
		return nil
	}
}

// ReadOnly opens a store for reading only, as commands that only look
// (inspect) do: Open neither creates the store nor claims a temporary
// directory, fails with an error matching ErrNoStore when there is no store
// at dir, and every write fails with ErrReadOnly. Blobs recorded without
// their bytes cannot be fetched into it.
func ReadOnly() Option {
	return func(o *options) error {
		o.readOnly = true
		return nil
	}
}
