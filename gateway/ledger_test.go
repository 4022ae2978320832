package gateway_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// TestHostileEvaluationBudget: 32 streams at once, spread over the
// gateways of 4 runs of one evaluation, against the evaluation's budget
// (in tokens, then in dollars) overshoot it by at most one request's
// maximum; the refused requests are recorded with a one-line reason.
func TestHostileEvaluationBudget(t *testing.T) {
	const runs, streams, maxTokens = 4, 32, 50
	body := conversation(gateway.OpenAIChat, 0, fmt.Sprintf(`,"stream":true,"max_tokens":%d`, maxTokens))
	// One request's maximum: its body's estimate and max_tokens.
	oneMax := int64(len(body)/3+1) + maxTokens
	price := gateway.Price{Input: 1000, Output: 1000} // $0.001 a token
	for _, tc := range []struct {
		name   string
		budget gateway.Budget
	}{
		{"tokens", gateway.Budget{Tokens: 500}},
		{"usd", gateway.Budget{USD: 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "gateway: usage")
			l, err := gateway.NewLedger(tc.budget, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			script := []gatewaytest.Reply{{Text: "short", InputTokens: 10, OutputTokens: 40, Delay: 300 * time.Millisecond}}
			prices := func(c *gateway.Config) { c.Prices = map[string]gateway.Price{"scripted": price} }
			var fs []*fixture
			for range runs {
				fs = append(fs, newFixture(t, gateway.OpenAIChat, script, prices, gateway.WithLedger(l)))
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			codes := map[int]int{}
			for i := range streams {
				f := fs[i%runs]
				wg.Add(1)
				go func() {
					defer wg.Done()
					req, _ := http.NewRequest(http.MethodPost, f.base+"/chat/completions", strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+f.gw.Token())
					resp, err := f.client.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					readAll(t, resp)
					mu.Lock()
					codes[resp.StatusCode]++
					mu.Unlock()
				}()
			}
			wg.Wait()
			var used int64
			var cost float64
			refused := 0
			for _, f := range fs {
				for _, r := range f.record.waitRecords(t, streams/runs) {
					if r.Refused == "budget" {
						refused++
						if r.Status != http.StatusTooManyRequests || !strings.Contains(r.Error, "the evaluation's budget of") || strings.Contains(r.Error, "\n") {
							t.Errorf("a request refused for the budget is recorded as %+v", r)
						}
					}
				}
				tot := f.gw.Totals()
				used += tot.TotalTokens
				cost += tot.CostUSD
			}
			spent, spentUSD := l.Spent()
			if spent != used {
				t.Errorf("the ledger says %d tokens were spent, the runs' gateways %d", spent, used)
			}
			over := used > tc.budget.Tokens+oneMax
			if tc.budget.USD > 0 {
				over = cost > tc.budget.USD+price.Cost(oneMax, 0)+1e-9
			}
			if over || refused == 0 || codes[http.StatusTooManyRequests] != refused || l.Refused() != refused {
				t.Errorf("%d streams over %d runs used %d tokens ($%.4f, ledger $%.4f) against a budget of %s (one request at most %d tokens); %d refused for the budget (ledger %d), statuses %v",
					streams, runs, used, cost, spentUSD, tc.budget, oneMax, refused, l.Refused(), codes)
			} else {
				t.Logf("%d streams over %d runs: %d tokens ($%.4f) against a budget of %s; statuses %v", streams, runs, used, cost, tc.budget, codes)
			}
		})
	}
}

// TestBudgetNeedsPrices: a budget in dollars with a model that has no
// price is refused when the gateway is made, not after it forwarded.
func TestBudgetNeedsPrices(t *testing.T) {
	l, _ := gateway.NewLedger(gateway.Budget{USD: 1}, 0, 0)
	cfg := &gateway.Config{Upstream: gateway.Upstream{BaseURL: mustURL(t, "http://127.0.0.1:1"), Flavour: gateway.OpenAIChat}, Model: "m", Allowed: []string{"m"}, Source: "models/m.yaml"}
	if _, err := gateway.New(cfg, gateway.WithLedger(l)); err == nil || !strings.Contains(err.Error(), "price of model m") {
		t.Errorf("a dollar budget without prices: %v", err)
	}
}

func TestParseBudget(t *testing.T) {
	for in, want := range map[string]gateway.Budget{
		"2000000": {Tokens: 2_000_000}, "500k": {Tokens: 500_000}, "2m": {Tokens: 2_000_000},
		"$5": {USD: 5}, "5usd": {USD: 5}, "2.50USD": {USD: 2.5},
	} {
		if got, err := gateway.ParseBudget(in); err != nil || got != want {
			t.Errorf("ParseBudget(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-5", "5 dollars", "$", "$-1", "1.5", "99999999999999999999", "NaNusd"} {
		if _, err := gateway.ParseBudget(in); err == nil {
			t.Errorf("ParseBudget(%q) took it", in)
		}
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
