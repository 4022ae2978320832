package accounts

import "fmt"

// Option configures Rewrite.
type Option func(*options) error

type options struct {
	day    int64
	hasDay bool
}

// WithDay sets the day number written as the date of the last password
// change of the new users in /etc/shadow: days since 1970-01-01 UTC, what
// shadow-utils computes as time / 86400 (it honours SOURCE_DATE_EPOCH). Day 0
// is written as an empty field, as shadow-utils does. Rewrite requires it,
// so that the same inputs always give the same bytes.
func WithDay(day int64) Option {
	return func(o *options) error {
		if day < 0 {
			return fmt.Errorf("day %d is before 1970", day)
		}
		o.day, o.hasDay = day, true
		return nil
	}
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if !o.hasDay {
		return nil, fmt.Errorf("no build day given, see accounts.WithDay")
	}
	return o, nil
}
