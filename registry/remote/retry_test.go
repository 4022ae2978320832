package remote

import (
	"context"
	"errors"
	"testing"
)

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{name: "canceled", err: context.Canceled, want: false},
		{name: "plain error", err: errors.New("refusing plain HTTP"), want: false},
		{name: "reset", err: &netErr{}, want: true},
	} {
		if got := retryable(tc.err); got != tc.want {
			t.Errorf("%s: retryable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

type netErr struct{}

func (*netErr) Error() string { return "connection reset by peer" }

func (*netErr) Timeout() bool { return false }

func (*netErr) Temporary() bool { return true }
