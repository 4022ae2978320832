package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// greedyUpstream serves chat completions as an upstream that writes as
// much as a request lets it: the larger of max_tokens and
// max_completion_tokens, else modelMax. It counts the requests it serves
// at once.
type greedyUpstream struct {
	*httptest.Server
	modelMax       int64
	inFlight, peak atomic.Int64
}

func newGreedyUpstream(t *testing.T, modelMax int64) *greedyUpstream {
	t.Helper()
	u := &greedyUpstream{modelMax: modelMax}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := u.inFlight.Add(1)
		defer u.inFlight.Add(-1)
		for {
			p := u.peak.Load()
			if n <= p || u.peak.CompareAndSwap(p, n) {
				break
			}
		}
		body, _ := io.ReadAll(r.Body)
		var q struct {
			MaxTokens   int64 `json:"max_tokens"`
			MaxComplTok int64 `json:"max_completion_tokens"`
		}
		_ = json.Unmarshal(body, &q)
		out := max(q.MaxTokens, q.MaxComplTok)
		if out == 0 || out > u.modelMax {
			out = u.modelMax
		}
		in := int64(len(body) / 4)
		time.Sleep(150 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","model":"scripted","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, in, out, in+out)
	}))
	t.Cleanup(u.Close)
	return u
}

// TestHostileParallelRequests: 40 requests at once against a run's limit
// of 100,000 tokens, each asking the upstream to write as much as it
// lets them, use at most the limit plus one request's maximum. Before,
// a request with no max_tokens was set aside at 4096 tokens and one with
// both max_tokens and max_completion_tokens at the smaller: 40 of them
// used 12.5 and 20 times the limit. And no more than the run's cap of
// requests reach the upstream at once.
func TestHostileParallelRequests(t *testing.T) {
	const limit, parallel, modelMax = 100_000, 40, 30_000
	for _, tc := range []struct {
		name      string
		extra     string
		maxOutput int64 // the model file's max_output_tokens
	}{
		{"no max_tokens", ``, modelMax},
		{"no max_tokens, the model's maximum unknown", ``, 0},
		{"max_tokens and max_completion_tokens", `,"max_tokens":100,"max_completion_tokens":30000`, modelMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Attack(t, "overspend the model", "the gateway sets aside each request's real maximum, and caps requests at once")
			up := newGreedyUpstream(t, modelMax)
			base, _ := url.Parse(up.URL + "/v1")
			cfg := &gateway.Config{Upstream: gateway.Upstream{BaseURL: base, Flavour: gateway.OpenAIChat}, Model: "scripted", Allowed: []string{"scripted"}, MaxOutput: tc.maxOutput}
			gw, err := gateway.New(cfg, gateway.WithLimits(gateway.Limits{MaxTokens: limit}))
			if err != nil {
				t.Fatal(err)
			}
			dir, err := os.MkdirTemp("", "gw")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			sock := filepath.Join(dir, "model.sock")
			if err := gw.Listen(sock); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { gw.Close() })
			f := &fixture{gw: gw, client: unixClient(sock), base: "http://127.0.0.1:4000"}
			body := conversation(gateway.OpenAIChat, 3, tc.extra)
			// One request's maximum: its input, as the upstream counts
			// it or the gateway estimates it, and the most it writes.
			oneMax := int64(len(body)/3+1) + modelMax
			var wg sync.WaitGroup
			codes := map[int]int{}
			var mu sync.Mutex
			for range parallel {
				wg.Go(func() {
					req, _ := http.NewRequest(http.MethodPost, f.base+"/chat/completions", strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+gw.Token())
					req.Header.Set("Content-Type", "application/json")
					resp, err := f.client.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					readAll(t, resp)
					mu.Lock()
					codes[resp.StatusCode]++
					mu.Unlock()
				})
			}
			wg.Wait()
			used := gw.Totals().TotalTokens
			if used > limit+oneMax {
				t.Errorf("%d requests at once used %d tokens (%.1f× the limit of %d; one request at most %d); statuses %v",
					parallel, used, float64(used)/limit, limit, oneMax, codes)
			} else {
				t.Logf("%d requests at once used %d tokens against a limit of %d; statuses %v", parallel, used, limit, codes)
			}
			if codes[http.StatusOK] == 0 {
				t.Errorf("no request went through: statuses %v", codes)
			}
			if p := up.peak.Load(); p > gateway.DefaultMaxConcurrent {
				t.Errorf("the upstream served %d requests at once, want at most %d", p, gateway.DefaultMaxConcurrent)
			}
		})
	}
}

func unixClient(sock string) *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}, MaxConnsPerHost: 0, MaxIdleConnsPerHost: 64},
	}
}
