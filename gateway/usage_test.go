package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// conversation returns a request body of flavour f whose conversation
// holds turns assistant turns, so the scripted server answers with step
// turns; extra adds top-level fields.
func conversation(f gateway.Flavour, turns int, extra string) string {
	var msgs []string
	for i := 0; i < turns; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"step %d"}`, i), fmt.Sprintf(`{"role":"assistant","content":"done %d"}`, i))
	}
	msgs = append(msgs, `{"role":"user","content":"next"}`)
	list := "[" + strings.Join(msgs, ",") + "]"
	switch f {
	case gateway.OpenAIResponses:
		return `{"model":"scripted","input":` + list + extra + `}`
	case gateway.AnthropicMessages:
		return `{"model":"scripted","max_tokens":1000,"messages":` + list + extra + `}`
	}
	return `{"model":"scripted","messages":` + list + extra + `}`
}

// TestHostileGatewayUsage: over a script of replies of different sizes,
// in each flavour, streamed and not, and for chat streams whatever the
// agent's stream_options, the gateway records exactly the usage the
// upstream reported, request by request and in all.
func TestHostileGatewayUsage(t *testing.T) {
	script := []gatewaytest.Reply{
		{Text: "first", InputTokens: 1234, OutputTokens: 56},
		{Text: "second, longer", InputTokens: 2000, OutputTokens: 7},
		{Text: "x", InputTokens: 1, OutputTokens: 1},
		{Text: "a long answer", ToolCalls: []gatewaytest.ToolCall{{Name: "shell", Arguments: `{"command":"go test ./..."}`}}, InputTokens: 99999, OutputTokens: 12345},
	}
	paths := map[gateway.Flavour]string{gateway.OpenAIChat: "/chat/completions", gateway.OpenAIResponses: "/responses", gateway.AnthropicMessages: "/v1/messages"}
	variants := []struct {
		name   string
		stream bool
		extra  string
		chat   bool // chat only
	}{
		{"whole", false, "", false},
		{"stream", true, `,"stream":true`, false},
		{"stream include_usage false", true, `,"stream":true,"stream_options":{"include_usage":false}`, true},
		{"stream include_usage true", true, `,"stream":true,"stream_options":{"include_usage":true}`, true},
		{"stream stream_options null", true, `,"stream":true,"stream_options":null`, true},
	}
	for _, fl := range gateway.Flavours {
		for _, v := range variants {
			if v.chat && fl != gateway.OpenAIChat {
				continue
			}
			t.Run(string(fl)+"/"+v.name, func(t *testing.T) {
				hostile.Case(t, "gateway: usage")
				f := newFixture(t, fl, script, nil)
				for turn := range script {
					req, _ := http.NewRequest(http.MethodPost, f.base+paths[fl], strings.NewReader(conversation(fl, turn, v.extra)))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer "+f.gw.Token())
					resp, err := f.client.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					var body strings.Builder
					_, err = fmt.Fprint(&body, readAll(t, resp))
					if err != nil || resp.StatusCode != 200 {
						t.Fatalf("turn %d: status %d: %s", turn, resp.StatusCode, body.String())
					}
					asked := !strings.Contains(v.extra, `"include_usage":false`) && !strings.Contains(v.extra, `"stream_options":null`) && (strings.Contains(v.extra, "include_usage") || fl != gateway.OpenAIChat || !v.stream)
					if fl == gateway.OpenAIChat && v.stream && strings.Contains(body.String(), `"usage"`) != asked {
						t.Errorf("turn %d: the agent asked for the usage: %v; the stream carried it: %v", turn, asked, !asked)
					}
				}
				recs := f.record.waitRecords(t, len(script))
				for i, r := range recs {
					in, out := f.up.Usage(i)
					if r.InputTokens != in || r.OutputTokens != out || r.Estimated {
						t.Errorf("record %d: %d+%d tokens (estimated %v), the upstream reported %d+%d", i, r.InputTokens, r.OutputTokens, r.Estimated, in, out)
					}
				}
				in, out := f.up.Reported()
				tot := f.gw.Totals()
				if tot.InputTokens != in || tot.OutputTokens != out || tot.TotalTokens != in+out {
					t.Errorf("recorded %d+%d=%d tokens, the upstream reported %d+%d", tot.InputTokens, tot.OutputTokens, tot.TotalTokens, in, out)
				} else {
					t.Logf("upstream %d+%d tokens, recorded %d+%d: equal", in, out, tot.InputTokens, tot.OutputTokens)
				}
			})
		}
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// TestHostileGatewayParallelStreams: 32 streams at once against a token limit
// overshoot it by at most one request's maximum, because each request's
// maximum is set aside before it is forwarded.
func TestHostileGatewayParallelStreams(t *testing.T) {
	hostile.Case(t, "gateway: usage")
	const limit, maxTokens = 500, 50
	// Each reply uses 50 tokens; the body's estimate is larger, so a
	// reservation covers what the reply uses.
	script := []gatewaytest.Reply{{Text: "short", InputTokens: 10, OutputTokens: 40, Delay: 300 * time.Millisecond}}
	f := newFixture(t, gateway.OpenAIChat, script, nil, gateway.WithLimits(gateway.Limits{MaxTokens: limit}))
	body := conversation(gateway.OpenAIChat, 0, fmt.Sprintf(`,"stream":true,"max_tokens":%d`, maxTokens))
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 32 {
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
	f.record.waitRecords(t, 32)
	tot := f.gw.Totals()
	// One request's maximum: its body's estimate and max_tokens.
	oneMax := int64(len(body)/3+1) + maxTokens
	if tot.TotalTokens > limit+oneMax || codes[http.StatusTooManyRequests] == 0 {
		t.Errorf("32 parallel streams used %d tokens against a limit of %d (one request at most %d); statuses %v", tot.TotalTokens, limit, oneMax, codes)
	} else {
		t.Logf("32 parallel streams: %d tokens used against a limit of %d; statuses %v", tot.TotalTokens, limit, codes)
	}
}
