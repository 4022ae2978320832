package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Limits bound what a run may spend; a zero field means no limit. Once a
// limit is reached every further request gets 429.
type Limits struct {
	// MaxRequests is how many requests are forwarded.
	MaxRequests int `json:"max_requests,omitempty"`
	// MaxTokens is how many tokens (input plus output) the run may use: a
	// request is refused once the total reached it.
	MaxTokens int64 `json:"max_tokens,omitempty"`
	// MaxCost is how many US dollars the run may spend, priced by the
	// model file's table.
	MaxCost float64 `json:"max_cost_usd,omitempty"`
	// MaxConcurrent is how many model requests of the run are forwarded
	// at once; the others wait. Zero means DefaultMaxConcurrent (this
	// limit is always on).
	MaxConcurrent int `json:"max_concurrent,omitempty"`
}

// DefaultMaxConcurrent is how many requests of one run go upstream at
// once unless Limits.MaxConcurrent says otherwise: more than an agent
// with subagents sends, few enough that a run cannot flood the upstream
// (or the evaluation's budget) with parallel requests.
const DefaultMaxConcurrent = 8

func (l Limits) concurrent() int {
	if l.MaxConcurrent > 0 {
		return l.MaxConcurrent
	}
	return DefaultMaxConcurrent
}

// Defaults of the options.
const (
	// DefaultRequestTimeout bounds a whole upstream exchange, stream
	// included: a long reasoning reply takes minutes, none takes this long.
	DefaultRequestTimeout = 15 * time.Minute
	// DefaultIdleTimeout bounds the wait for the upstream's next bytes
	// (its response headers, or the next piece of a stream): a stalled
	// upstream ends in an error instead of a hung agent.
	DefaultIdleTimeout = 3 * time.Minute
	// maxRequestBody bounds a request body, which the gateway reads whole
	// to learn the model: a long conversation with images is a few MB.
	maxRequestBody = 64 << 20
)

// Option configures a Gateway.
type Option func(*options) error

type options struct {
	token          string
	record         io.Writer
	limits         Limits
	requestTimeout time.Duration
	idleTimeout    time.Duration
	transport      http.RoundTripper
	log            io.Writer
	reportKey      []byte // a remote gateway's, to sign its report
	ledger         *Ledger
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{
		requestTimeout: DefaultRequestTimeout,
		idleTimeout:    DefaultIdleTimeout,
		record:         io.Discard,
		log:            io.Discard,
	}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if o.token == "" {
		t, err := NewToken()
		if err != nil {
			return nil, err
		}
		o.token = t
	}
	if o.transport == nil {
		o.transport = newTransport(o.idleTimeout)
	}
	return o, nil
}

// NewToken returns a fresh per-run token: 32 random bytes in hex behind a
// prefix that says what it is.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating the run's model token: %w", err)
	}
	return "sse-run-" + hex.EncodeToString(b), nil
}

// WithToken sets the per-run token the container must present (in
// Authorization: Bearer, x-api-key or api-key). The default is a fresh
// random token (see Token).
func WithToken(token string) Option {
	return func(o *options) error {
		if len(token) < 16 {
			return errors.New("the gateway token is shorter than 16 characters: use gateway.NewToken")
		}
		o.token = token
		return nil
	}
}

// WithRecorder sets where each request's record goes, one JSON object per
// line (model.jsonl). The default discards them.
func WithRecorder(w io.Writer) Option {
	return func(o *options) error {
		if w == nil {
			return errors.New("the gateway's recorder is nil")
		}
		o.record = w
		return nil
	}
}

// WithLimits sets the run's limits. The default is no limit.
func WithLimits(l Limits) Option {
	return func(o *options) error {
		if l.MaxRequests < 0 || l.MaxTokens < 0 || l.MaxCost < 0 || l.MaxConcurrent < 0 {
			return fmt.Errorf("limits must not be negative: %+v", l)
		}
		o.limits = l
		return nil
	}
}

// WithRequestTimeout bounds each upstream exchange from the request to
// the last byte of the reply. The default value is 15m.
func WithRequestTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("request timeout must be positive, got %s", d)
		}
		o.requestTimeout = d
		return nil
	}
}

// WithIdleTimeout bounds each wait for the upstream: for its response
// headers and for every next piece of the body. The default value is 3m.
func WithIdleTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("idle timeout must be positive, got %s", d)
		}
		o.idleTimeout = d
		return nil
	}
}

// WithLog sets where the gateway reports what goes wrong (an upstream
// failure, a record that cannot be written). The default discards it.
func WithLog(w io.Writer) Option {
	return func(o *options) error {
		if w == nil {
			w = io.Discard
		}
		o.log = w
		return nil
	}
}

// withTransport replaces the upstream transport (tests).
func withTransport(rt http.RoundTripper) Option {
	return func(o *options) error {
		o.transport = rt
		return nil
	}
}

func newTransport(idle time.Duration) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = idle
	t.MaxIdleConnsPerHost = 16
	// The host's proxy settings apply, as they would for the agent on an
	// open network.
	return t
}
