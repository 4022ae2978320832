package gateway

import (
	"strings"
	"testing"
)

// TestParseRequestPasses: strict reading refuses none of what agents
// send: nested keys that differ only in case (a tool's schema), escapes,
// nulls for optional fields, the fields each flavour knows.
func TestParseRequestPasses(t *testing.T) {
	for _, c := range []struct {
		f    Flavour
		body string
		max  int64
		n    int64
	}{
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":"\u0068i \"quoted\""}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"Name":{},"name":{}}}}}],"n":2,"max_tokens":null,"max_completion_tokens":300,"stream":null,"stream_options":null}`, 300, 2},
		{OpenAIResponses, ` {"model":"m","input":[{"role":"user","content":"x"}],"tools":[{"type":"custom","name":"apply_patch"},{"type":"local_shell"}],"max_output_tokens":5000,"reasoning":{"effort":"high"},"store":false} `, 5000, 1},
		// Codex groups its MCP tools in namespaces of function tools.
		{OpenAIResponses, `{"model":"m","input":[],"tools":[{"type":"namespace","name":"ssebench","tools":[{"type":"function","name":"build","parameters":{}}]},{"type":"function","name":"shell","parameters":{}}]}`, 0, 1},
		{AnthropicMessages, `{"model":"m","max_tokens":32000,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[],"tools":[{"name":"Bash","input_schema":{}},{"type":"text_editor_20250728","name":"str_replace_based_edit_tool"}],"thinking":{"type":"enabled","budget_tokens":1024},"metadata":{"user_id":"u"}}`, 32000, 1},
	} {
		q, err := parseRequest(c.f, []byte(c.body))
		if err != nil {
			t.Errorf("%s: %v\n%s", c.f, err, c.body)
			continue
		}
		if q.Model != "m" || q.MaxTokens != c.max || q.N != c.n {
			t.Errorf("%s: read %+v", c.f, q)
		}
	}
	// The refusal says why, on one line.
	_, err := parseRequest(OpenAIChat, []byte(`{"model":"a","MODEL":"b"}`))
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "differ only in case") {
		t.Errorf("model and MODEL: %v", err)
	}
}

// TestNamespaceHidesNoHostedTool: a namespace is the agent's only when
// every tool in it is.
func TestNamespaceHidesNoHostedTool(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","input":[],"tools":[{"type":"namespace","name":"x","tools":[{"type":"web_search"}]}]}`,
		`{"model":"m","input":[],"tools":[{"type":"namespace","name":"x","tools":[{"type":"namespace","name":"y","tools":[{"type":"mcp","server_url":"https://e.invalid"}]}]}]}`,
		`{"model":"m","input":[],"tools":[{"type":"namespace","tools":[{"type":"namespace","tools":[{"type":"namespace","tools":[{"type":"namespace","tools":[{"type":"namespace","tools":[]}]}]}]}]}]}`,
	} {
		if _, err := parseRequest(OpenAIResponses, []byte(body)); err == nil {
			t.Errorf("parseRequest(%s) = nil error", body)
		}
	}
	if _, err := parseRequest(OpenAIChat, []byte(`{"model":"m","messages":[],"tools":[{"type":"namespace","tools":[]}]}`)); err == nil {
		t.Error("a namespace in the chat flavour passed")
	}
}
