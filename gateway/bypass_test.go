package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// bypass is one request an agent sends to get a model call that is not
// counted, or to reach the upstream with the real key outside the run's
// endpoints. Each must come to nothing: refused before the upstream, or
// forwarded and counted to the token.
type bypass struct {
	name    string
	flavour gateway.Flavour
	method  string
	path    string
	header  map[string]string
	body    string
	// stream, when set, is the body instead, sent chunked (no length).
	stream func() io.Reader
	script []gatewaytest.Reply
	prices map[string]gateway.Price
	// hangUp, when set, makes the agent read this many bytes of the
	// reply and close the connection.
	hangUp int
	// check judges the outcome; nil: refused, the upstream got nothing.
	check func(t *testing.T, f *fixture, resp *http.Response, data []byte)
}

const chatMsgs = `"messages":[{"role":"user","content":"fix the bug"}]`

var bypasses = []bypass{
	// The six.
	{name: "plain chat request", path: "/chat/completions", body: `{"model":"scripted",` + chatMsgs + `}`, check: counted},
	{name: "stream with include_usage false", path: "/chat/completions",
		body:  `{"model":"scripted","stream":true,"stream_options":{"include_usage":false},` + chatMsgs + `}`,
		check: countedHidden},
	{name: "POST /files", path: "/files", header: map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, body: "--x\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--x--\r\n"},
	{name: "POST /batches", path: "/batches", body: `{"input_file_id":"file-1","endpoint":"/v1/chat/completions","completion_window":"24h"}`},
	{name: "model and MODEL", path: "/chat/completions", body: `{"model":"expensive","MODEL":"scripted",` + chatMsgs + `}`},
	{name: "form-encoded body", path: "/chat/completions", header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, body: "model=expensive&messages=hi"},

	// Endpoints and methods outside the allow-list.
	{name: "POST /v1/batches", path: "/v1/batches", body: `{}`},
	{name: "GET /files", method: http.MethodGet, path: "/files"},
	{name: "POST /fine_tuning/jobs", path: "/fine_tuning/jobs", body: `{"model":"scripted","training_file":"file-1"}`},
	{name: "POST /embeddings", path: "/embeddings", body: `{"model":"scripted","input":"x"}`},
	{name: "another flavour's endpoint", path: "/messages", body: `{"model":"scripted","max_tokens":10,` + chatMsgs + `}`},
	{name: "responses on a chat run", path: "/responses", body: `{"model":"scripted","input":"x"}`},
	{name: "messages batches", flavour: gateway.AnthropicMessages, path: "/v1/messages/batches", body: `{"requests":[]}`},
	{name: "count_tokens", flavour: gateway.AnthropicMessages, path: "/v1/messages/count_tokens", body: `{"model":"scripted",` + chatMsgs + `}`},
	{name: "stored response read back", flavour: gateway.OpenAIResponses, method: http.MethodGet, path: "/responses/resp_1"},
	{name: "GET on the chat endpoint", method: http.MethodGet, path: "/chat/completions"},
	{name: "PUT on the chat endpoint", method: http.MethodPut, path: "/chat/completions", body: `{"model":"scripted",` + chatMsgs + `}`},
	{name: "DELETE a model", method: http.MethodDelete, path: "/models/ft-scripted"},
	{name: "dot segments", path: "/chat/completions/../../files", body: `{}`},
	{name: "escaped slash", path: "/chat%2Fcompletions", body: `{"model":"scripted",` + chatMsgs + `}`},
	{name: "unknown query parameter", path: "/chat/completions?api-version=2024-01-01", body: `{"model":"scripted",` + chatMsgs + `}`},
	{name: "protocol upgrade", path: "/chat/completions", header: map[string]string{"Connection": "Upgrade", "Upgrade": "websocket"}, body: `{"model":"scripted",` + chatMsgs + `}`},

	// Bodies the gateway and the upstream would read apart.
	{name: "model twice", path: "/chat/completions", body: `{"model":"expensive","model":"scripted",` + chatMsgs + `}`},
	{name: "Model in another case", path: "/chat/completions", body: `{"Model":"scripted",` + chatMsgs + `}`},
	{name: "stream key with a long s", path: "/chat/completions", body: `{"model":"scripted","ſtream":true,` + chatMsgs + `}`},
	{name: "max_tokens with a Kelvin sign", path: "/chat/completions", body: `{"model":"scripted","max_to` + "\u212a" + `ens":5,` + chatMsgs + `}`},
	{name: "duplicate nested key", path: "/chat/completions", body: `{"model":"scripted","stream_options":{"include_usage":true,"include_usage":false},` + chatMsgs + `}`},
	{name: "JSON array body", path: "/chat/completions", body: `[{"model":"expensive"}]`},
	{name: "body that is not JSON", path: "/chat/completions", body: `model: expensive`},
	{name: "a second object after the first", path: "/chat/completions", body: `{"model":"scripted",` + chatMsgs + `}{"model":"expensive"}`},
	{name: "invalid UTF-8", path: "/chat/completions", body: "{\"model\":\"scripted\xff\"," + chatMsgs + "}"},
	{name: "gzip body", path: "/chat/completions", header: map[string]string{"Content-Encoding": "gzip"}, body: `{"model":"scripted",` + chatMsgs + `}`},
	{name: "no model", path: "/chat/completions", body: `{` + chatMsgs + `}`},
	{name: "model as a list", path: "/chat/completions", body: `{"model":["scripted","expensive"],` + chatMsgs + `}`},
	{name: "n of 100", path: "/chat/completions", body: `{"model":"scripted","n":100,` + chatMsgs + `}`},
	{name: "max_tokens as a float", path: "/chat/completions", body: `{"model":"scripted","max_tokens":1e9,` + chatMsgs + `}`},
	{name: "stream as a string", path: "/chat/completions", body: `{"model":"scripted","stream":"false",` + chatMsgs + `}`},
	{name: "a router's fallback models", path: "/chat/completions", body: `{"model":"scripted","models":["scripted","expensive"],"route":"fallback",` + chatMsgs + `}`},
	{name: "a body over 64 MiB, chunked", path: "/chat/completions", stream: func() io.Reader {
		return io.MultiReader(strings.NewReader(`{"model":"scripted","pad":"`), io.LimitReader(repeatReader('a'), 65<<20), strings.NewReader(`"}`))
	}, check: tooLarge},
	{name: "background response", flavour: gateway.OpenAIResponses, path: "/responses", body: `{"model":"scripted","background":true,"input":"x"}`},

	// Tools the upstream runs: billed apart, and a way out to the network.
	{name: "responses web search tool", flavour: gateway.OpenAIResponses, path: "/responses", body: `{"model":"scripted","input":"x","tools":[{"type":"web_search_preview"}]}`},
	{name: "responses remote MCP server", flavour: gateway.OpenAIResponses, path: "/responses", body: `{"model":"scripted","input":"x","tools":[{"type":"mcp","server_label":"x","server_url":"https://example.invalid/sse"}]}`},
	{name: "responses image generation", flavour: gateway.OpenAIResponses, path: "/responses", body: `{"model":"scripted","input":"x","tools":[{"type":"function","name":"f","parameters":{}},{"type":"image_generation"}]}`},
	{name: "messages web fetch tool", flavour: gateway.AnthropicMessages, path: "/v1/messages", body: `{"model":"scripted","max_tokens":10,` + chatMsgs + `,"tools":[{"type":"web_fetch_20250910","name":"web_fetch"}]}`},
	{name: "messages MCP connector", flavour: gateway.AnthropicMessages, path: "/v1/messages", body: `{"model":"scripted","max_tokens":10,` + chatMsgs + `,"mcp_servers":[{"type":"url","url":"https://example.invalid/mcp","name":"x"}]}`},
	{name: "chat web search options", path: "/chat/completions", body: `{"model":"scripted",` + chatMsgs + `,"web_search_options":{}}`},

	// Forwarded, and counted all the same.
	{name: "headers that bill elsewhere or override the method", path: "/chat/completions",
		header: map[string]string{"OpenAI-Organization": "org-other", "OpenAI-Project": "proj-other", "X-HTTP-Method-Override": "DELETE", "X-Forwarded-Host": "files.example"},
		body:   `{"model":"scripted",` + chatMsgs + `}`, check: headersDropped},
	{name: "an upstream that reports no usage", path: "/chat/completions", body: `{"model":"scripted",` + chatMsgs + `}`,
		script: []gatewaytest.Reply{{Text: "an answer without usage", NoUsage: true}}, check: estimated},
	{name: "a stream without usage", flavour: gateway.AnthropicMessages, path: "/v1/messages", body: `{"model":"scripted","max_tokens":50,"stream":true,` + chatMsgs + `}`,
		script: []gatewaytest.Reply{{Text: "an answer without usage", NoUsage: true}}, check: estimated},
	{name: "chat with a function tool", path: "/chat/completions", body: `{"model":"scripted",` + chatMsgs + `,"tools":[{"type":"function","function":{"name":"shell","parameters":{"type":"object"}}}],"tool_choice":"auto","parallel_tool_calls":true,"max_completion_tokens":100,"n":1}`, check: counted},
	{name: "responses with a function tool", flavour: gateway.OpenAIResponses, path: "/responses", body: `{"model":"scripted","input":"x","tools":[{"type":"function","name":"shell","parameters":{}}],"max_output_tokens":100}`, check: counted},
	{name: "messages with client tools", flavour: gateway.AnthropicMessages, path: "/v1/messages?beta=true", body: `{"model":"scripted","max_tokens":50,` + chatMsgs + `,"tools":[{"name":"Read","input_schema":{"type":"object"}},{"type":"bash_20250124","name":"bash"}],"tool_choice":{"type":"auto"}}`, check: counted},
	{name: "prompt cache reads", flavour: gateway.AnthropicMessages, path: "/v1/messages", body: `{"model":"scripted","max_tokens":50,` + chatMsgs + `}`,
		script: []gatewaytest.Reply{{Text: "cached", InputTokens: 3, OutputTokens: 5, CacheReadTokens: 90000}}, check: counted},
	{name: "prompt cache reads, streamed", flavour: gateway.AnthropicMessages, path: "/v1/messages", body: `{"model":"scripted","max_tokens":50,"stream":true,` + chatMsgs + `}`,
		script: []gatewaytest.Reply{{Text: "cached", InputTokens: 3, OutputTokens: 5, CacheReadTokens: 90000}}, check: counted},
	{name: "hang up before the usage, messages", flavour: gateway.AnthropicMessages, path: "/v1/messages", body: `{"model":"scripted","max_tokens":500,"stream":true,` + chatMsgs + `}`,
		script: []gatewaytest.Reply{{Text: strings.Repeat("a long answer ", 20), InputTokens: 7, OutputTokens: 300, EventDelay: 20 * time.Millisecond}}, hangUp: 1500, check: hungUp},
	{name: "hang up before the usage, responses", flavour: gateway.OpenAIResponses, path: "/responses", body: `{"model":"scripted","stream":true,"input":"x"}`,
		script: []gatewaytest.Reply{{Text: strings.Repeat("a long answer ", 20), InputTokens: 7, OutputTokens: 300, EventDelay: 20 * time.Millisecond}}, hangUp: 1500, check: hungUp},
	{name: "hang up before the usage, chat", path: "/chat/completions", body: `{"model":"scripted","stream":true,` + chatMsgs + `}`,
		script: []gatewaytest.Reply{{Text: strings.Repeat("a long answer ", 20), InputTokens: 7, OutputTokens: 300, EventDelay: 20 * time.Millisecond}}, hangUp: 1500, check: hungUp},
	{name: "answered by a dearer model", path: "/chat/completions", body: `{"model":"scripted",` + chatMsgs + `}`,
		script: []gatewaytest.Reply{{Text: "hi", InputTokens: 1000, OutputTokens: 1000, AnsweredBy: "dear"}},
		prices: map[string]gateway.Price{"scripted": {Input: 1, Output: 1}, "dear": {Input: 100, Output: 100}}, check: pricedAsAnswered},
}

// TestHostileGatewayBypasses sends each attempt through a gateway to the scripted
// server and judges it: 0 through.
func TestHostileGatewayBypasses(t *testing.T) {
	for _, b := range bypasses {
		t.Run(b.name, func(t *testing.T) {
			hostile.Case(t, "gateway: bypass")
			flavour := b.flavour
			if flavour == "" {
				flavour = gateway.OpenAIChat
			}
			script := b.script
			if script == nil {
				script = []gatewaytest.Reply{{Text: "the scripted answer"}}
			}
			f := newFixture(t, flavour, script, func(c *gateway.Config) {
				c.Allowed = []string{"scripted"}
				c.Prices = b.prices
			})
			method := b.method
			if method == "" {
				method = http.MethodPost
			}
			var body io.Reader = strings.NewReader(b.body)
			if b.stream != nil {
				body = io.NopCloser(b.stream()) // not a type whose length the client knows
			}
			req, err := http.NewRequest(method, f.base+b.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if b.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			req.Header.Set("Authorization", "Bearer "+f.gw.Token())
			for k, v := range b.header {
				req.Header.Set(k, v)
			}
			resp, err := f.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var data []byte
			if b.hangUp > 0 {
				data = make([]byte, b.hangUp)
				_, err = io.ReadFull(resp.Body, data)
			} else {
				data, err = io.ReadAll(resp.Body)
			}
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			check := b.check
			if check == nil {
				check = refused
			}
			check(t, f, resp, data)
			if !t.Failed() {
				recs := rawRecords(t, f, 1)
				why := recs[len(recs)-1]["error"]
				if why == nil {
					why = fmt.Sprintf("%v+%v tokens counted", recs[len(recs)-1]["input_tokens"], recs[len(recs)-1]["output_tokens"])
				}
				t.Logf("%s %s → %d, 0 through: %v", method, cut(b.path, 60), resp.StatusCode, why)
			}
		})
	}
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// rawRecords reads model.jsonl as maps, for fields a Record may not have.
func rawRecords(t *testing.T, f *fixture, n int) []map[string]any {
	t.Helper()
	f.record.waitRecords(t, n)
	f.record.mu.Lock()
	defer f.record.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(f.record.b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("model.jsonl line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// refused: a 4xx from the gateway, nothing upstream, a record with the
// reason on one line.
func refused(t *testing.T, f *fixture, resp *http.Response, data []byte) {
	t.Helper()
	if got := f.up.Received(); len(got) != 0 {
		t.Errorf("through: the upstream got %s %s (status %d)", got[0].Method, got[0].Path, resp.StatusCode)
	}
	if resp.StatusCode < 400 || resp.StatusCode > 499 {
		t.Errorf("status %d, want a refusal: %s", resp.StatusCode, data)
	}
	recs := rawRecords(t, f, 1)
	if len(recs) != 1 || recs[0]["refused"] == nil || recs[0]["error"] == nil || strings.Contains(fmt.Sprint(recs[0]["error"]), "\n") {
		t.Errorf("records = %v, want one refusal with a one-line reason", recs)
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// tooLarge: refused with 413, unforwarded.
func tooLarge(t *testing.T, f *fixture, resp *http.Response, data []byte) {
	t.Helper()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want 413: %s", resp.StatusCode, data)
	}
	refused(t, f, resp, data)
}

// counted: forwarded, and the totals are the upstream's own usage.
func counted(t *testing.T, f *fixture, resp *http.Response, data []byte) {
	t.Helper()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	f.record.waitRecords(t, 1)
	in, out := f.up.Reported()
	tot := f.gw.Totals()
	if in == 0 || tot.InputTokens != in || tot.OutputTokens != out {
		t.Errorf("through uncounted: the upstream reported %d+%d tokens, the gateway counted %d+%d", in, out, tot.InputTokens, tot.OutputTokens)
	}
}

// countedHidden: the stream was asked for its usage whatever the agent
// sent, counted, and the agent got no usage it did not ask for.
func countedHidden(t *testing.T, f *fixture, resp *http.Response, data []byte) {
	t.Helper()
	counted(t, f, resp, data)
	got := f.up.Received()
	if len(got) != 1 || !strings.Contains(string(got[0].Body), `"include_usage":true`) {
		t.Errorf("the upstream was not asked for the usage: %s", got[0].Body)
	}
	if strings.Contains(string(data), `"usage"`) {
		t.Errorf("the agent got usage it did not ask for:\n%s", data)
	}
	if !strings.Contains(string(data), "[DONE]") || !strings.Contains(string(data), `"finish_reason":"stop"`) {
		t.Errorf("the stream lost more than its usage:\n%s", data)
	}
}

func headersDropped(t *testing.T, f *fixture, resp *http.Response, data []byte) {
	t.Helper()
	counted(t, f, resp, data)
	for _, r := range f.up.Received() {
		for _, h := range []string{"OpenAI-Organization", "OpenAI-Project", "X-HTTP-Method-Override", "X-Forwarded-Host"} {
			if v := r.Header.Get(h); v != "" {
				t.Errorf("through: the upstream got %s: %s", h, v)
			}
		}
	}
}

// estimated: no usage came, so the gateway counted its estimate and said
// so, rather than nothing.
func estimated(t *testing.T, f *fixture, resp *http.Response, data []byte) {
	t.Helper()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	recs := rawRecords(t, f, 1)
	tot := f.gw.Totals()
	if tot.InputTokens == 0 || tot.OutputTokens == 0 || len(recs) != 1 || recs[0]["usage_estimated"] != true {
		t.Errorf("through uncounted: totals %+v, record %v: want an estimate marked as one", tot, recs)
	}
}

// hungUp: the agent read part of a stream and hung up before the usage
// came; the gateway counts at least what it relayed, and says so.
func hungUp(t *testing.T, f *fixture, resp *http.Response, data []byte) {
	t.Helper()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	recs := rawRecords(t, f, 1)
	tot := f.gw.Totals()
	if len(recs) != 1 || recs[0]["usage_estimated"] != true || tot.OutputTokens < int64(len(data))/4 {
		t.Errorf("through uncounted: the agent got %d bytes of the answer; totals %+v, record %v: want at least a token per 4 bytes, marked as an estimate", len(data), tot, recs)
	}
}

// pricedAsAnswered: the cost is the answering model's.
func pricedAsAnswered(t *testing.T, f *fixture, resp *http.Response, data []byte) {
	t.Helper()
	counted(t, f, resp, data)
	if tot := f.gw.Totals(); tot.CostUSD < 0.199 || tot.CostUSD > 0.201 {
		t.Errorf("cost $%.4f, want $0.2000 (2000 tokens at the answering model's $100/M)", tot.CostUSD)
	}
}
