package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
)

const realKey = "sk-real-key-0123456789abcdef"

// fixture is a gateway on a Unix socket in front of a scripted server.
type fixture struct {
	up     *gatewaytest.Server
	gw     *gateway.Gateway
	client *http.Client
	record *syncBuffer
	base   string // the client's base URL
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// waitRecords waits for n records: a record is written once the
// gateway's handler returns, which may be just after the client read the
// whole reply.
func (s *syncBuffer) waitRecords(t *testing.T, n int) []gateway.Record {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs := s.records(t)
		if len(recs) >= n || time.Now().After(deadline) {
			return recs
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *syncBuffer) records(t *testing.T) []gateway.Record {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []gateway.Record
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if line == "" {
			continue
		}
		var r gateway.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("model.jsonl line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

func newFixture(t *testing.T, flavour gateway.Flavour, script []gatewaytest.Reply, cfgMod func(*gateway.Config), opts ...gateway.Option) *fixture {
	t.Helper()
	up, err := gatewaytest.New(script, realKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL + "/v1")
	cfg := &gateway.Config{Upstream: gateway.Upstream{BaseURL: u, Key: realKey, Flavour: flavour}, Model: "scripted", Allowed: []string{"scripted"}}
	if cfgMod != nil {
		cfgMod(cfg)
	}
	rec := &syncBuffer{}
	gw, err := gateway.New(cfg, append([]gateway.Option{gateway.WithRecorder(rec)}, opts...)...)
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
	client := &http.Client{
		Timeout: 20 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}},
	}
	return &fixture{up: up, gw: gw, client: client, record: rec, base: "http://127.0.0.1:4000"}
}

// post sends a request with the given credentials and returns the
// response with its whole body.
func (f *fixture) post(t *testing.T, path, token string, anthropicStyle bool, body any) (*http.Response, []byte, error) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, f.base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if anthropicStyle {
		req.Header.Set("X-Api-Key", token)
	} else {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

func chatBody(stream bool) map[string]any {
	return map[string]any{"model": "scripted", "stream": stream, "messages": []any{map[string]any{"role": "user", "content": "fix the bug"}}}
}

var flavourCases = []struct {
	flavour gateway.Flavour
	path    string
	body    func(stream bool) map[string]any
}{
	{gateway.OpenAIChat, "/chat/completions", chatBody},
	{gateway.OpenAIResponses, "/responses", func(stream bool) map[string]any {
		return map[string]any{"model": "scripted", "stream": stream, "input": "fix the bug"}
	}},
	{gateway.AnthropicMessages, "/messages", func(stream bool) map[string]any {
		return map[string]any{"model": "scripted", "stream": stream, "max_tokens": 100, "messages": []any{map[string]any{"role": "user", "content": "fix the bug"}}}
	}},
}

// TestFlavours sends one request of each flavour, streaming and not: the
// reply comes through, the upstream sees the real key and never the
// token, and the record's usage is the script's.
func TestFlavours(t *testing.T) {
	script := []gatewaytest.Reply{{Text: "I will look at the parser first.", ToolCalls: []gatewaytest.ToolCall{{Name: "shell", Arguments: `{"command":"ls"}`}}, InputTokens: 1234, OutputTokens: 56}}
	for _, c := range flavourCases {
		for _, stream := range []bool{false, true} {
			name := string(c.flavour)
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				f := newFixture(t, c.flavour, script, nil)
				resp, data, err := f.post(t, c.path, f.gw.Token(), c.flavour == gateway.AnthropicMessages, c.body(stream))
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, data)
				}
				text := string(data)
				// Streams cut the text in pieces; the tool name is whole.
				if !strings.Contains(text, "shell") || (!stream && !strings.Contains(text, "I will look at the parser first.")) {
					t.Errorf("reply does not carry the script's answer: %s", text)
				}
				got := f.up.Received()
				if len(got) != 1 {
					t.Fatalf("upstream got %d requests, want 1", len(got))
				}
				h := got[0].Header
				wantHeader := "Authorization"
				if c.flavour == gateway.AnthropicMessages {
					wantHeader = "X-Api-Key"
				}
				if v := h.Get(wantHeader); !strings.Contains(v, realKey) {
					t.Errorf("upstream %s = %q, want the real key", wantHeader, v)
				}
				for k, vs := range h {
					for _, v := range vs {
						if strings.Contains(v, f.gw.Token()) {
							t.Errorf("upstream header %s carries the run's token", k)
						}
					}
				}
				if got[0].Path != "/v1"+c.path {
					t.Errorf("upstream path %q, want %q", got[0].Path, "/v1"+c.path)
				}
				recs := f.record.waitRecords(t, 1)
				if len(recs) != 1 {
					t.Fatalf("%d records, want 1", len(recs))
				}
				r := recs[0]
				if r.Status != 200 || r.Failed || r.InputTokens != 1234 || r.OutputTokens != 56 || r.TotalTokens != 1290 || r.Stream != stream || r.Model != "scripted" {
					t.Errorf("record = %+v, want status 200, usage 1234+56=1290, stream %v", r, stream)
				}
				tot := f.gw.Totals()
				if tot.Requests != 1 || tot.InputTokens != 1234 || tot.OutputTokens != 56 {
					t.Errorf("totals = %+v", tot)
				}
			})
		}
	}
}

// TestWrongToken: a request without the run's token gets 401 and never
// reaches the upstream.
func TestWrongToken(t *testing.T) {
	f := newFixture(t, gateway.OpenAIChat, []gatewaytest.Reply{{Text: "hi"}}, nil)
	for _, tok := range []string{"", "wrong", realKey, f.gw.Token() + "x"} {
		resp, data, err := f.post(t, "/chat/completions", tok, false, chatBody(false))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q: status %d, want 401", tok, resp.StatusCode)
		}
		if !strings.Contains(string(data), "SSE_API_KEY") {
			t.Errorf("401 body %s does not say which key to use", data)
		}
	}
	if n := len(f.up.Received()); n != 0 {
		t.Errorf("upstream got %d requests, want none", n)
	}
	f.record.waitRecords(t, 4)
	if tot := f.gw.Totals(); tot.Refused != 4 || tot.Requests != 0 {
		t.Errorf("totals = %+v, want 4 refused", tot)
	}
	// x-api-key is accepted too.
	resp, _, err := f.post(t, "/chat/completions", f.gw.Token(), true, chatBody(false))
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("the right token in x-api-key: %v %v", resp, err)
	}
}

// TestMaxRequests: with a limit of 3, the fourth request gets 429 with a
// body saying which limit.
func TestMaxRequests(t *testing.T) {
	script := []gatewaytest.Reply{{Text: "one"}}
	f := newFixture(t, gateway.OpenAIChat, script, nil, gateway.WithLimits(gateway.Limits{MaxRequests: 3}))
	for i := 1; i <= 4; i++ {
		resp, data, err := f.post(t, "/chat/completions", f.gw.Token(), false, chatBody(i%2 == 0))
		if err != nil {
			t.Fatal(err)
		}
		want := 200
		if i == 4 {
			want = http.StatusTooManyRequests
		}
		if resp.StatusCode != want {
			t.Fatalf("request %d: status %d, want %d: %s", i, resp.StatusCode, want, data)
		}
		f.record.waitRecords(t, i)
		if i == 4 {
			var body struct {
				Error struct{ Message, Code string }
			}
			if err := json.Unmarshal(data, &body); err != nil || body.Error.Code != "max_requests" || !strings.Contains(body.Error.Message, "limit of 3") {
				t.Errorf("429 body = %s, want code max_requests and the limit", data)
			}
			if resp.Header.Get("X-Should-Retry") != "false" {
				t.Errorf("429 without x-should-retry: false")
			}
		}
	}
	if n := len(f.up.Received()); n != 3 {
		t.Errorf("upstream got %d requests, want 3", n)
	}
	tot := f.gw.Totals()
	if tot.Requests != 3 || tot.Refused != 1 || tot.LimitReached != "max_requests" {
		t.Errorf("totals = %+v", tot)
	}
}

// TestMaxTokensAndCost: once the usage reaches a limit the next request
// is refused; the cost comes from the price table.
func TestMaxTokensAndCost(t *testing.T) {
	script := []gatewaytest.Reply{{Text: "x", InputTokens: 600_000, OutputTokens: 100_000}}
	prices := func(c *gateway.Config) { c.Prices = map[string]gateway.Price{"scripted": {Input: 1, Output: 10}} }
	t.Run("tokens", func(t *testing.T) {
		f := newFixture(t, gateway.AnthropicMessages, script, prices, gateway.WithLimits(gateway.Limits{MaxTokens: 1_000_000}))
		codes := []int{}
		for i := 0; i < 3; i++ {
			resp, _, err := f.post(t, "/messages", f.gw.Token(), true, flavourCases[2].body(true))
			if err != nil {
				t.Fatal(err)
			}
			codes = append(codes, resp.StatusCode)
			f.record.waitRecords(t, i+1)
		}
		if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 {
			t.Errorf("statuses %v, want 200 200 429 (700k, then 1.4M tokens used)", codes)
		}
		if tot := f.gw.Totals(); tot.TotalTokens != 1_400_000 || tot.CostUSD < 3.19 || tot.CostUSD > 3.21 {
			t.Errorf("totals = %+v, want 1.4M tokens costing $3.20", tot)
		}
	})
	t.Run("cost", func(t *testing.T) {
		f := newFixture(t, gateway.OpenAIResponses, script, prices, gateway.WithLimits(gateway.Limits{MaxCost: 2}))
		// $1.60 a request: the third finds $3.20 spent.
		for i, want := range []int{200, 200, 429} {
			resp, data, err := f.post(t, "/responses", f.gw.Token(), false, flavourCases[1].body(i == 1))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != want {
				t.Errorf("request %d: status %d, want %d: %s", i+1, resp.StatusCode, want, data)
			}
			f.record.waitRecords(t, i+1)
		}
	})
	t.Run("cost needs prices", func(t *testing.T) {
		u, _ := url.Parse("http://127.0.0.1:1")
		_, err := gateway.New(&gateway.Config{Upstream: gateway.Upstream{BaseURL: u}, Model: "m", Allowed: []string{"m"}, Source: "m.yaml"}, gateway.WithLimits(gateway.Limits{MaxCost: 1}))
		if err == nil || !strings.Contains(err.Error(), "price of model m") {
			t.Errorf("New with --max-cost and no price: %v", err)
		}
	})
}

// TestModelNotAllowed: a model the run did not name is refused.
func TestModelNotAllowed(t *testing.T) {
	f := newFixture(t, gateway.OpenAIChat, []gatewaytest.Reply{{Text: "hi"}}, nil)
	body := chatBody(false)
	body["model"] = "expensive-model"
	resp, data, err := f.post(t, "/chat/completions", f.gw.Token(), false, body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(data), `expensive-model`) || !strings.Contains(string(data), "scripted") {
		t.Errorf("status %d body %s, want 403 naming the model and the allowed one", resp.StatusCode, data)
	}
	if n := len(f.up.Received()); n != 0 {
		t.Errorf("upstream got %d requests", n)
	}
}

// TestBrokenStreams: an upstream that resets mid-stream, or stalls, gives
// the client an error quickly (never a hang) and a failed record.
func TestBrokenStreams(t *testing.T) {
	for _, c := range []struct {
		name  string
		reply gatewaytest.Reply
		want  string
	}{
		{"reset", gatewaytest.Reply{Text: "a long answer that breaks off", ResetMidStream: true}, "broke off"},
		{"stall", gatewaytest.Reply{Text: "a long answer that stalls", StallMidStream: true}, "nothing for too long"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, gateway.OpenAIChat, []gatewaytest.Reply{c.reply}, nil, gateway.WithIdleTimeout(300*time.Millisecond))
			start := time.Now()
			resp, data, err := f.post(t, "/chat/completions", f.gw.Token(), false, chatBody(true))
			took := time.Since(start)
			if err == nil {
				t.Fatalf("the client read a whole reply (status %d): %s", resp.StatusCode, data)
			}
			if errors.Is(err, context.DeadlineExceeded) || took > 5*time.Second {
				t.Fatalf("the client waited %s for %v", took, err)
			}
			t.Logf("client error after %s: %v", took, err)
			recs := f.record.waitRecords(t, 1)
			if len(recs) != 1 || !recs[0].Failed || !strings.Contains(recs[0].Error, c.want) {
				t.Fatalf("records = %+v, want one failed saying %q", recs, c.want)
			}
			if tot := f.gw.Totals(); tot.Failed != 1 {
				t.Errorf("totals = %+v, want 1 failed", tot)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		f := newFixture(t, gateway.OpenAIChat, nil, func(c *gateway.Config) { c.Upstream.BaseURL, _ = url.Parse("http://127.0.0.1:1") })
		resp, data, err := f.post(t, "/chat/completions", f.gw.Token(), false, chatBody(false))
		if err != nil || resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(data), "upstream") {
			t.Errorf("unreachable upstream: %v %v %s", resp, err, data)
		}
	})
}

// TestStreamsFlush: each event reaches the client as the upstream sends
// it, not at the end.
func TestStreamsFlush(t *testing.T) {
	f := newFixture(t, gateway.OpenAIChat, []gatewaytest.Reply{{Text: "first", StallMidStream: true}}, nil)
	b, _ := json.Marshal(chatBody(true))
	req, _ := http.NewRequest(http.MethodPost, f.base+"/chat/completions", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+f.gw.Token())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := f.client.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q, %v: want the first event while the upstream still streams", line, err)
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "claude.yaml"), []byte("base_url: https://api.example.invalid\napi_key_env: MY_KEY\nflavour: anthropic-messages\nmodels: [claude-small]\nprices:\n  claude: {input: 3, output: 15}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("base_url: https://x.invalid\nkey: 1\n"), 0o644)
	env := map[string]string{"MY_KEY": "k1", "SSE_BASE_URL": "http://127.0.0.1:9/v1/", "SSE_API_KEY": "k2"}
	lookup := func(k string) string { return env[k] }

	c, err := gateway.Resolve("claude", "", dir, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if c.Upstream.Flavour != gateway.AnthropicMessages || c.Upstream.Key != "k1" || c.Model != "claude" ||
		strings.Join(c.Allowed, ",") != "claude,claude-small" || c.Prices["claude"].Output != 15 {
		t.Errorf("Resolve(claude) = %+v", c)
	}
	c, err = gateway.Resolve("gpt-x", "", dir, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if c.Upstream.BaseURL.String() != "http://127.0.0.1:9/v1" || c.Upstream.Key != "k2" || c.Upstream.Flavour != gateway.OpenAIChat || c.Allowed[0] != "gpt-x" {
		t.Errorf("Resolve(gpt-x) = %+v", c)
	}
	if _, err := gateway.Resolve("bad", "", dir, lookup); err == nil || !strings.Contains(err.Error(), "key") {
		t.Errorf("Resolve(bad) = %v, want the unknown key named", err)
	}
	if _, err := gateway.Resolve("", "", dir, func(string) string { return "" }); !errors.Is(err, gateway.ErrNoUpstream) {
		t.Errorf("Resolve without upstream = %v", err)
	}
	delete(env, "MY_KEY")
	if _, err := gateway.Resolve("claude", "", dir, lookup); err == nil || !strings.Contains(err.Error(), "MY_KEY") {
		t.Errorf("Resolve without the key variable = %v", err)
	}
}

// TestReplyEndsSettled: by the time an agent has read a reply to its end,
// the request is counted and what it set aside is released, so that its
// next request, sent at once, finds the first one settled (with a
// Content-Length the agent could see the last byte before the gateway
// settled, and a request sent then was refused as if two were in flight).
func TestReplyEndsSettled(t *testing.T) {
	script := make([]gatewaytest.Reply, 40)
	for i := range script {
		script[i] = gatewaytest.Reply{Text: "ok", InputTokens: 10, OutputTokens: 5}
	}
	f := newFixture(t, gateway.OpenAIChat, script, nil)
	for i := 1; i <= len(script); i++ {
		resp, data, err := f.post(t, "/chat/completions", f.gw.Token(), false, chatBody(false))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("request %d: %v %s", i, err, data)
		}
		if n := f.gw.Totals().Requests; n != i {
			t.Fatalf("after reading reply %d to its end the gateway had counted %d requests: the reply ended before the request was settled", i, n)
		}
	}
}
