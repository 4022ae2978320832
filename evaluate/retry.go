package evaluate

import (
	"errors"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// permanentError is a failure that trying again cannot change.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// Permanent marks err as a failure that trying again cannot change (an
// image that is missing, a task folder that is not there): Evaluate gives
// up on it at once instead of retrying it as an infrastructure failure.
// The job is still left for --resume, which runs it once it is fixed.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// retryable says whether another try may end otherwise: not for an error
// marked Permanent, nor for an image the store and the registry do not
// have. A missing base image was built for, failed, and retried twice
// more, its 700-character error printed each time.
func retryable(err error) bool {
	var pe permanentError
	switch {
	case errors.As(err, &pe), errors.Is(err, store.ErrNotFound), remote.IsNotFound(err):
		return false
	}
	return true
}
