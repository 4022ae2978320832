package gateway

import (
	"bytes"
	"encoding/json"
)

// Usage is the token usage of one reply.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// usageFields covers where the three flavours put their counts: the chat
// API's prompt_tokens and completion_tokens, the responses and messages
// APIs' input_tokens and output_tokens.
type usageFields struct {
	PromptTokens     *int64 `json:"prompt_tokens"`
	CompletionTokens *int64 `json:"completion_tokens"`
	InputTokens      *int64 `json:"input_tokens"`
	OutputTokens     *int64 `json:"output_tokens"`
	TotalTokens      *int64 `json:"total_tokens"`
	// Anthropic counts cached prompt tokens apart from input_tokens
	// (OpenAI counts them in prompt_tokens): they are input all the same.
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

// payload is a reply body or one stream event. usage is at the top level
// (chat, responses, messages, Anthropic's message_delta), under response
// (the responses API's response.completed event) or under message
// (Anthropic's message_start event).
type payload struct {
	Type     string       `json:"type"`
	Model    string       `json:"model"`
	Usage    *usageFields `json:"usage"`
	Response *struct {
		Model string       `json:"model"`
		Usage *usageFields `json:"usage"`
	} `json:"response"`
	Message *struct {
		Model string       `json:"model"`
		Usage *usageFields `json:"usage"`
	} `json:"message"`
	Error json.RawMessage `json:"error"`
}

// usageScanner accumulates usage from a JSON body or from a stream's
// events. In a stream the counts are cumulative, so the latest value of
// each count wins: Anthropic sends input tokens in message_start and the
// running output count in each message_delta; OpenAI sends one final chunk
// with usage (null before).
type usageScanner struct {
	usage Usage
	// cacheWrite and cacheRead are Anthropic's cached input tokens,
	// added to the input in result.
	cacheWrite, cacheRead int64
	seen                  bool
	model                 string // the model the upstream says answered
	errText               string // an error event or body, cut short
}

func (s *usageScanner) merge(f *usageFields) {
	if f == nil {
		return
	}
	set := func(dst *int64, v *int64) {
		if v != nil && *v > 0 {
			*dst = *v
			s.seen = true
		}
	}
	set(&s.usage.InputTokens, f.PromptTokens)
	set(&s.usage.InputTokens, f.InputTokens)
	set(&s.usage.OutputTokens, f.CompletionTokens)
	set(&s.usage.OutputTokens, f.OutputTokens)
	set(&s.usage.TotalTokens, f.TotalTokens)
	set(&s.cacheWrite, f.CacheCreationInputTokens)
	set(&s.cacheRead, f.CacheReadInputTokens)
}

// data reads one JSON document: a whole body or one event's data.
func (s *usageScanner) data(b []byte) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return
	}
	var p payload
	if json.Unmarshal(b, &p) != nil {
		return
	}
	if p.Model != "" {
		s.model = p.Model
	}
	s.merge(p.Usage)
	if p.Response != nil {
		if p.Response.Model != "" {
			s.model = p.Response.Model
		}
		s.merge(p.Response.Usage)
	}
	if p.Message != nil {
		if p.Message.Model != "" {
			s.model = p.Message.Model
		}
		s.merge(p.Message.Usage)
	}
	if (len(p.Error) > 0 && string(p.Error) != "null") || p.Type == "error" {
		s.errText = cut(string(b), maxErrorText)
	}
}

// result returns the usage with the total filled in when the upstream did
// not give one.
func (s *usageScanner) result() Usage {
	u := s.usage
	u.InputTokens += s.cacheWrite + s.cacheRead
	if u.TotalTokens < u.InputTokens+u.OutputTokens {
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	return u
}

// maxErrorText bounds an upstream error kept in a record.
const maxErrorText = 500

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// sseScanner splits a server-sent event stream into lines as bytes pass
// through and hands each event's data to a usageScanner. It holds at most
// one line (bounded by maxLine) in memory.
type sseScanner struct {
	u       *usageScanner
	line    []byte
	data    []byte
	tooLong bool
}

// maxLine bounds a buffered stream line; a longer one (a huge base64
// image, say) carries no usage and is skipped.
const maxLine = 1 << 20

func (s *sseScanner) Write(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.append(p)
			return
		}
		s.append(p[:i])
		s.endLine()
		p = p[i+1:]
	}
}

func (s *sseScanner) append(p []byte) {
	if s.tooLong || len(s.line)+len(p) > maxLine {
		s.tooLong, s.line = true, s.line[:0]
		return
	}
	s.line = append(s.line, p...)
}

func (s *sseScanner) endLine() {
	line := bytes.TrimSuffix(s.line, []byte("\r"))
	tooLong := s.tooLong
	s.line, s.tooLong = s.line[:0], false
	switch {
	case tooLong:
	case len(line) == 0: // the end of an event
		s.flush()
	case bytes.HasPrefix(line, []byte("data:")):
		d := bytes.TrimPrefix(line[5:], []byte(" "))
		if len(s.data) > 0 {
			s.data = append(s.data, '\n')
		}
		if len(s.data)+len(d) <= maxLine {
			s.data = append(s.data, d...)
		}
	}
}

func (s *sseScanner) flush() {
	if len(s.data) > 0 && !bytes.Equal(s.data, []byte("[DONE]")) {
		s.u.data(s.data)
	}
	s.data = s.data[:0]
}

// Close handles an event the stream did not end with a blank line.
func (s *sseScanner) Close() {
	if len(s.line) > 0 {
		s.endLine()
	}
	s.flush()
}

// When the upstream gives no usage for a reply it answered (a stream cut
// short, an upstream that does not report), the gateway counts its own
// estimate instead of nothing, and the record says so: an agent must not
// get a free request by making the usage go missing. The estimate is a
// byte count over bytesPerToken, which over-counts English and code (3.5
// to 4.5 bytes a token) and JSON's quoting on top, so the limits stay on
// the safe side.
const bytesPerToken = 3

// estimateTokens estimates the tokens in n bytes of request or reply.
func estimateTokens(n int64) int64 { return (n + bytesPerToken - 1) / bytesPerToken }

// settle returns the usage to record for a forwarded generating request:
// the upstream's own when it gave it for a whole reply; else, for a
// reply that came (2xx), the estimate from the request's and the reply's
// sizes, taking the larger of it and what was reported for a reply cut
// short (broken: the upstream broke off, or the agent hung up before the
// end, where the usage comes). An error status spends nothing, and counts
// what it says.
func settle(u Usage, seen bool, status int, broken bool, reqSize, respSize int64) (Usage, bool) {
	if status < 200 || status > 299 || (seen && !broken) {
		return u, false
	}
	est := Usage{InputTokens: estimateTokens(reqSize), OutputTokens: estimateTokens(respSize)}
	out := u
	if !seen || out.InputTokens == 0 {
		out.InputTokens = est.InputTokens
	}
	out.OutputTokens = max(out.OutputTokens, est.OutputTokens)
	out.TotalTokens = out.InputTokens + out.OutputTokens
	return out, out != u
}
