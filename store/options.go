package store

// Option configures a Store (see Open).
type Option func(*Store)

// WithFetcher lets the store fetch the blobs it recorded without their
// bytes when they are read. Without one, reading such a blob fails with
// ErrCorruptBlob, naming the repository it can be pulled from.
func WithFetcher(f Fetcher) Option {
	return func(s *Store) { s.fetch.f = f }
}
