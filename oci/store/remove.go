package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
)

// Remove is `ssebench store rm` of one name: it parses ref and deletes
// the name (see Delete), and returns the name as the store holds it. A
// name the store lacks is an error that says how to list those it holds.
func (s *Store) Remove(ctx context.Context, ref string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("%q is not an image reference: %w", ref, err)
	}
	if err := s.Delete(ctx, r); err != nil {
		if errors.Is(err, ErrNotFound) {
			return "", fmt.Errorf("%s is not a name in the image store %s: `ssebench store ls` lists the names it holds", r.Name(), s.Dir())
		}
		return "", err
	}
	return r.Name(), nil
}
