package gateway

import (
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// TestParseRequestRefusesUnpriced: a key that an upstream in Go reads
// another way (a tool's "Type", which slipped a hosted tool past the
// check of "type"; stream_options' "Include_Usage"), a service tier
// billed above the plain price, and audio in or out are refused: the
// gateway would count them at the wrong price, or not at all.
func TestParseRequestRefusesUnpriced(t *testing.T) {
	for _, c := range []struct {
		name string
		f    Flavour
		body string
		want string
	}{
		{"a tool's Type beside its type", OpenAIChat, `{"model":"m","tools":[{"type":"function","Type":"web_search","function":{"name":"f"}}]}`, `"Type"`},
		{"a tool's Type alone", OpenAIChat, `{"model":"m","tools":[{"Type":"web_search"}]}`, `must be spelled "type"`},
		{"a namespace's Tools", OpenAIResponses, `{"model":"m","tools":[{"type":"namespace","name":"n","Tools":[{"type":"web_search"}]}]}`, `must be spelled "tools"`},
		{"an Anthropic tool's TYPE", AnthropicMessages, `{"model":"m","max_tokens":10,"tools":[{"name":"x","TYPE":"web_search_20250305"}]}`, `must be spelled "type"`},
		{"stream_options' Include_Usage", OpenAIChat, `{"model":"m","stream":true,"stream_options":{"Include_Usage":false}}`, `must be spelled "include_usage"`},
		{"the priority tier", OpenAIChat, `{"model":"m","service_tier":"priority"}`, "service_tier"},
		{"Anthropic's auto tier", AnthropicMessages, `{"model":"m","max_tokens":10,"service_tier":"auto"}`, "service_tier"},
		{"audio out", OpenAIChat, `{"model":"m","modalities":["text","audio"],"audio":{"voice":"alloy","format":"wav"}}`, "audio"},
		{"audio modality alone", OpenAIChat, `{"model":"m","modalities":["audio"]}`, "modality"},
		{"audio in", OpenAIChat, `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]}]}`, "audio input"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hostile.Case(t, "gateway: usage")
			_, err := parseRequest(c.f, []byte(c.body))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("parseRequest(%s) = %v, want an error saying %q", c.body, err, c.want)
			}
		})
	}
	// What agents send at the plain price passes.
	for _, c := range []struct {
		f    Flavour
		body string
	}{
		{OpenAIChat, `{"model":"m","service_tier":"auto","modalities":["text"]}`},
		{OpenAIResponses, `{"model":"m","service_tier":"flex"}`},
		{AnthropicMessages, `{"model":"m","max_tokens":10,"service_tier":"standard_only"}`},
	} {
		if _, err := parseRequest(c.f, []byte(c.body)); err != nil {
			t.Errorf("parseRequest(%s) = %v", c.body, err)
		}
	}
}

// TestMaxTokensLarger: with both max_tokens and max_completion_tokens
// the larger is what an upstream may serve, and what is set aside.
func TestMaxTokensLarger(t *testing.T) {
	q, err := parseRequest(OpenAIChat, []byte(`{"model":"m","max_tokens":100,"max_completion_tokens":50000}`))
	if err != nil || q.MaxTokens != 50000 {
		t.Errorf("parseRequest() = %+v, %v; want MaxTokens 50000", q, err)
	}
	for _, c := range []struct {
		modelMax, asked, want int64
	}{
		{0, 0, UnknownMaxOutput},
		{30000, 0, 30000},
		{30000, 100, 100},
		{30000, 90000, 30000},
		{0, 500000, 500000},
	} {
		if got := (&Config{MaxOutput: c.modelMax}).maxOutput(c.asked); got != c.want {
			t.Errorf("maxOutput(model %d, asked %d) = %d, want %d", c.modelMax, c.asked, got, c.want)
		}
	}
}

// TestLedgerRunShare: one run's requests in flight hold at most its share
// of the evaluation's budget at once (its first request always passes);
// another run still gets its own.
func TestLedgerRunShare(t *testing.T) {
	hostile.Case(t, "gateway: usage")
	for _, c := range []struct {
		name   string
		budget Budget
		cost   float64
	}{
		{"tokens", Budget{Tokens: 1000}, 0},
		{"usd", Budget{USD: 1}, 0.4},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := NewLedger(c.budget, 0, 0, WithRunShare(0.25))
			if err != nil {
				t.Fatal(err)
			}
			if ok, msg := l.reserve(0, 0, 400, c.cost); !ok {
				t.Fatalf("a run's first request was refused: %s", msg)
			}
			ok, msg := l.reserve(400, c.cost, 100, c.cost/4)
			if ok || !strings.Contains(msg, "may hold 25% of it at once") {
				t.Errorf("reserve() beyond the run's share = %t %q, want refused", ok, msg)
			}
			if ok, msg := l.reserve(0, 0, 100, c.cost/4); !ok {
				t.Errorf("another run's request was refused: %s", msg)
			}
		})
	}
	if _, err := NewLedger(Budget{Tokens: 1}, 0, 0, WithRunShare(0)); err == nil {
		t.Errorf("NewLedger(share 0) = nil error")
	}
}
