package gateway

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
)

// Budget is what a whole evaluation may spend on its model, over all its
// runs: tokens (input plus output) or US dollars, one of the two.
type Budget struct {
	Tokens int64   `json:"tokens,omitempty"`
	USD    float64 `json:"usd,omitempty"`
}

// ParseBudget reads --budget: a whole number of tokens ("2000000", "2m",
// "500k") or US dollars with a leading $ or a trailing "usd" ("$5",
// "5usd", "2.50usd").
func ParseBudget(s string) (Budget, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	bad := fmt.Errorf("--budget %q: give tokens (2000000, 500k, 2m) or US dollars ($5, 5usd)", s)
	usd := false
	if strings.HasPrefix(v, "$") {
		v, usd = v[1:], true
	} else if strings.HasSuffix(v, "usd") {
		v, usd = strings.TrimSpace(strings.TrimSuffix(v, "usd")), true
	}
	if usd {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
			return Budget{}, bad
		}
		return Budget{USD: f}, nil
	}
	mult := int64(1)
	switch {
	case strings.HasSuffix(v, "k"):
		v, mult = v[:len(v)-1], 1_000
	case strings.HasSuffix(v, "m"):
		v, mult = v[:len(v)-1], 1_000_000
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return Budget{}, bad
	}
	return Budget{Tokens: n * mult}, nil
}

// String is the budget as a person reads it: "2000000 tokens" or "$5.00".
func (b Budget) String() string {
	if b.USD > 0 {
		return fmt.Sprintf("$%.2f", b.USD)
	}
	return fmt.Sprintf("%d tokens", b.Tokens)
}

// IsZero says there is no budget.
func (b Budget) IsZero() bool { return b.Tokens <= 0 && b.USD <= 0 }

// Ledger is an evaluation's budget shared by the gateways of all its runs
// on this machine. Each gateway sets a request's maximum aside in the
// ledger before forwarding it, as it does against its run's own limits,
// and settles it with what the request used; a request is refused while
// what was spent plus what the requests in flight (of every run) may still
// use reaches the budget. So the runs together overshoot it by at most one
// request's maximum, however many stream at once.
type Ledger struct {
	budget Budget
	// share is the part of the budget one run may hold in requests in
	// flight at once.
	share float64

	mu           sync.Mutex
	tokens       int64   // spent
	cost         float64 // spent
	reserved     int64   // set aside by requests in flight
	reservedCost float64
	refused      int // requests refused for the budget
}

// DefaultRunShare is the part of an evaluation's budget that one run's
// requests in flight may hold at once: a run with many parallel requests
// must not set the whole budget aside and starve the evaluation's other
// runs (nor, with a maximum too low, overshoot it).
const DefaultRunShare = 0.25

// LedgerOption configures NewLedger.
type LedgerOption func(*Ledger) error

// WithRunShare sets the part of the budget (above 0, at most 1) one run
// may hold in requests in flight at once; a run's first request in flight
// is always let through, whatever its maximum. The default value is
// DefaultRunShare.
func WithRunShare(f float64) LedgerOption {
	return func(l *Ledger) error {
		if !(f > 0 && f <= 1) {
			return fmt.Errorf("a run's share of the budget must be above 0 and at most 1, got %g", f)
		}
		l.share = f
		return nil
	}
}

// NewLedger returns the ledger of budget, with what earlier runs of the
// evaluation (a resumed one) already spent.
func NewLedger(b Budget, spentTokens int64, spentUSD float64, opts ...LedgerOption) (*Ledger, error) {
	if b.IsZero() {
		return nil, errors.New("a budget needs tokens or US dollars: --budget 2000000 or --budget 5usd")
	}
	if b.Tokens > 0 && b.USD > 0 {
		return nil, errors.New("a budget is in tokens or in US dollars, not both")
	}
	l := &Ledger{budget: b, share: DefaultRunShare, tokens: spentTokens, cost: spentUSD}
	for _, o := range opts {
		if err := o(l); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Budget returns the ledger's budget.
func (l *Ledger) Budget() Budget { return l.budget }

// Spent returns what the runs used so far.
func (l *Ledger) Spent() (tokens int64, usd float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tokens, l.cost
}

// Exhausted says no further run should start: what the runs used
// reached the budget. (What requests in flight set aside does not count:
// it is mostly given back when they end, and a run started meanwhile has
// its requests refused until it is.)
func (l *Ledger) Exhausted() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.budget.Tokens > 0 {
		return l.tokens >= l.budget.Tokens
	}
	return l.cost >= l.budget.USD
}

// Refused is how many requests the budget refused.
func (l *Ledger) Refused() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

// over says the spent amount plus what is set aside plus (tokens, cost)
// reaches the budget.
func (l *Ledger) over(tokens int64, cost float64) bool {
	if l.budget.Tokens > 0 {
		return l.tokens+l.reserved+tokens >= l.budget.Tokens
	}
	return l.cost+l.reservedCost+cost >= l.budget.USD
}

// reserve sets a request's maximum aside, or says in one line why the
// budget refuses it. held and heldCost are what the request's run holds
// already in requests in flight.
func (l *Ledger) reserve(held int64, heldCost float64, tokens int64, cost float64) (ok bool, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if held > 0 || heldCost > 0 {
		if l.budget.Tokens > 0 && float64(held+tokens) > l.share*float64(l.budget.Tokens) {
			l.refused++
			return false, fmt.Sprintf("this run holds %d tokens of the evaluation's budget of %d in requests under way, and may hold %.0f%% of it at once (eval --budget): wait for one to end", held, l.budget.Tokens, l.share*100)
		}
		if l.budget.USD > 0 && heldCost+cost > l.share*l.budget.USD {
			l.refused++
			return false, fmt.Sprintf("this run holds $%.4f of the evaluation's budget of $%.4f in requests under way, and may hold %.0f%% of it at once (eval --budget): wait for one to end", heldCost, l.budget.USD, l.share*100)
		}
	}
	// As the run's limits: the requests in flight are counted at their
	// maximum, this one not, so it may overshoot by its own maximum.
	if l.over(0, 0) {
		l.refused++
		if l.budget.Tokens > 0 {
			return false, fmt.Sprintf("the evaluation's budget of %d tokens is spent: %d used by its runs, up to %d more in requests under way (eval --budget)", l.budget.Tokens, l.tokens, l.reserved)
		}
		return false, fmt.Sprintf("the evaluation's budget of $%.4f is spent: $%.4f used by its runs, up to $%.4f more in requests under way (eval --budget)", l.budget.USD, l.cost, l.reservedCost)
	}
	l.reserved += tokens
	l.reservedCost += cost
	return true, ""
}

// settle replaces a reservation by what the request used.
func (l *Ledger) settle(reserved int64, reservedCost float64, used int64, cost float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reserved -= reserved
	l.reservedCost -= reservedCost
	l.tokens += used
	l.cost += cost
}

// WithLedger counts the run's requests against an evaluation's budget too
// (see Ledger). A budget in dollars needs a price for every model the run
// allows.
func WithLedger(l *Ledger) Option {
	return func(o *options) error {
		o.ledger = l
		return nil
	}
}
