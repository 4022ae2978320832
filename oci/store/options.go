package store

// Option configures a Store (see Open).
type Option func(*Store)

// WithFetcher lets the store fetch the blobs it recorded without their
// bytes when they are read. Without one, reading such a blob fails with
// ErrCorruptBlob, naming the repository it can be pulled from.
func WithFetcher(f Fetcher) Option {
	return func(s *Store) { s.fetch.f = f }
}

// ReadOnly opens a store for reading only, as commands that only look
// (inspect) do: Open neither creates the store nor claims a temporary
// directory, fails with an error matching ErrNoStore when there is no store
// at dir, and every write fails with ErrReadOnly. Blobs recorded without
// their bytes cannot be fetched into it.
func ReadOnly() Option {
	return func(s *Store) { s.readOnly = true }
}
