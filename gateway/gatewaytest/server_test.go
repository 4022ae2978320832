package gatewaytest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, url string, body any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestAsides: a side request (a CLI asking a small model for a title)
// gets its side reply, not the script's step with its tool calls; the
// loop's requests still follow the script.
func TestAsides(t *testing.T) {
	s, err := New([]Reply{
		{Text: "step zero", ToolCalls: []ToolCall{{Name: "Bash", Arguments: `{"command":"ls"}`}}},
		{Match: "listing", Text: "step one"},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetAsides(Aside{Match: "Write a 5-10 word title", Reply: Reply{Text: `{"title":"Fix the parser"}`}})
	user := func(text string) map[string]any { return map[string]any{"role": "user", "content": text} }
	for _, c := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"side request by system prompt", map[string]any{"model": "m", "max_tokens": 50,
			"system":   []any{map[string]any{"type": "text", "text": "Write a 5-10 word title for the conversation."}},
			"messages": []any{user("fix the bug")}}, `Fix the parser`},
		{"loop, step 0", map[string]any{"model": "m", "max_tokens": 50, "system": "You are a coding agent.",
			"messages": []any{user("fix the bug")}}, `"name":"Bash"`},
		{"side request by its message, after the loop's first turn", map[string]any{"model": "m", "max_tokens": 50,
			"messages": []any{user("fix the bug"), map[string]any{"role": "assistant", "content": "step zero"}, user("Write a 5-10 word title")}}, `Fix the parser`},
		{"loop, step 1", map[string]any{"model": "m", "max_tokens": 50, "system": "You are a coding agent.",
			"messages": []any{user("fix the bug"), map[string]any{"role": "assistant", "content": "step zero"}, user("the listing")}}, `step one`},
	} {
		code, body := post(t, s.URL+"/v1/messages", c.body)
		if code != 200 || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want %s", c.name, code, body, c.want)
		}
	}
	var asides []string
	for _, r := range s.Received() {
		asides = append(asides, r.Aside)
	}
	if strings.Join(asides, "|") != "Write a 5-10 word title||Write a 5-10 word title|" {
		t.Errorf("Received Aside fields %q, want the two side requests marked", asides)
	}
	// In the chat flavour, the system message is the system prompt.
	code, body := post(t, s.URL+"/v1/chat/completions", map[string]any{"model": "m", "messages": []any{
		map[string]any{"role": "system", "content": "Write a 5-10 word title"}, user("fix the bug")}})
	if code != 200 || !strings.Contains(body, "Fix the parser") {
		t.Errorf("chat side request: %d %s", code, body)
	}
}

// TestCountTokens: Anthropic's token count answers an estimate and is no
// step of the script.
func TestCountTokens(t *testing.T) {
	s, err := New([]Reply{{Text: "only step"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": strings.Repeat("x", 300)}}}
	code, body := post(t, s.URL+"/v1/messages/count_tokens?beta=true", req)
	var n struct {
		InputTokens int `json:"input_tokens"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &n) != nil || n.InputTokens < 100 {
		t.Fatalf("count_tokens: %d %s, want input_tokens of about 120", code, body)
	}
	if got := s.Received(); len(got) != 1 || !got[0].CountTokens || got[0].Model != "m" {
		t.Errorf("Received = %+v, want one count_tokens request for m", got)
	}
	if in, out := s.Reported(); in != 0 || out != 0 {
		t.Errorf("Reported() = %d, %d: a count is no usage", in, out)
	}
	// The script's step is still the first.
	if code, body := post(t, s.URL+"/v1/messages", req); code != 200 || !strings.Contains(body, "only step") {
		t.Errorf("messages after a count: %d %s", code, body)
	}
}

// TestMessagesStreamPing: a messages stream carries a ping after
// message_start, as Anthropic's do.
func TestMessagesStreamPing(t *testing.T) {
	s, err := New([]Reply{{Text: "hello"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, body := post(t, s.URL+"/v1/messages", map[string]any{"model": "m", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	i, j := strings.Index(body, "event: message_start\n"), strings.Index(body, "event: ping\ndata: {\"type\":\"ping\"}\n\n")
	if i < 0 || j < i || !strings.Contains(body, "event: message_stop") {
		t.Errorf("stream has no ping after message_start:\n%s", body)
	}
}

// TestMismatchNamesReply: the 400 a request the script did not expect
// gets names the reply as the script's author counts it, from 1 (the
// script's first reply is reply 1), as the script loader's errors do.
func TestMismatchNamesReply(t *testing.T) {
	s, err := New([]Reply{
		{Text: "listing", ToolCalls: []ToolCall{{Name: "shell", Arguments: `{"command":"ls"}`}}},
		{Match: "go.mod", Text: "done"},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	user := func(text string) map[string]any { return map[string]any{"role": "user", "content": text} }
	asst := map[string]any{"role": "assistant", "content": "listing"}
	for _, c := range []struct {
		name string
		msgs []any
		want string
	}{
		{"second reply's match fails", []any{user("fix the bug"), asst, user("README.md")}, `reply 2 expects the last message to contain \"go.mod\"`},
		{"past the last reply", []any{user("fix the bug"), asst, user("go.mod"), asst, user("more")}, `the script has 2 replies and the conversation already has 2 assistant turns: the script needs a reply 3`},
	} {
		code, body := post(t, s.URL+"/v1/messages", map[string]any{"model": "m", "max_tokens": 50, "messages": c.msgs})
		if code != http.StatusBadRequest || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want 400 with %s", c.name, code, body, c.want)
		}
	}

	failing, err := New([]Reply{{Status: http.StatusTooManyRequests}}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer failing.Close()
	code, body := post(t, failing.URL+"/v1/messages", map[string]any{"model": "m", "max_tokens": 50, "messages": []any{user("fix the bug")}})
	if want := "scripted error 429 at reply 1"; code != http.StatusTooManyRequests || !strings.Contains(body, want) {
		t.Errorf("scripted status: %d %s, want 429 with %s", code, body, want)
	}
}
