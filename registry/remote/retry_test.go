package remote

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
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

// TestParseRetryAfter reads both forms RFC 9110 allows, and refuses what
// is neither.
func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"7", 7 * time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"Thu, 03 Dec 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Thu, 03 Dec 2026 11:59:00 GMT", 0, true}, // past: no wait
		{"Thursday, 03-Dec-26 12:01:00 GMT", time.Minute, true},
		{"99999999999999999999", 0, false},
		{"-3", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	} {
		got, ok := parseRetryAfter(tc.v, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseRetryAfter(%q) = %s, %v; want %s, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}

// TestPauseKeepsTheDeadline: a wait that would end past the context's
// deadline is not started; the error says why, in one line.
func TestPauseKeepsTheDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	err := pause(ctx, &retryAfter{error: errors.New("429 Too Many Requests"), host: "127.0.0.1:5000", wait: 20 * time.Second}, time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:5000 asks to wait 20s") || !strings.Contains(err.Error(), "deadline") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("pause = %v, want one line naming the registry, the 20s wait and the deadline", err)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("pause took %s: it started a wait it could not finish", took)
	}
}
