// Package gatewaytest provides a scripted model server for tests: it
// listens on loopback, speaks the OpenAI chat completions, OpenAI
// responses and Anthropic messages APIs, streaming and not, and answers
// each request with the script's reply for the conversation so far.
//
// The reply for a request is the script's reply N+1, where N is how many
// assistant turns the conversation already holds: the first request of a
// tool-use loop gets reply 1 (the script's first), the request carrying
// the results of its tool calls reply 2, and so on. A retried request
// gets the same reply. Messages count replies from 1, as the script's
// own errors do.
//
// Besides the agent's loop, a CLI may send side requests (a small model
// asked for a title or a summary: SetAsides answers those apart from the
// script) and, in the messages flavour, token counts
// (POST /v1/messages/count_tokens, answered with an estimate).
package gatewaytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ToolCall is a tool call the model makes.
type ToolCall struct {
	ID        string // default call_<turn>_<index>
	Name      string
	Arguments string // JSON object text
}

// Reply is one scripted answer.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	// InputTokens and OutputTokens are the usage reported; zero means
	// 100+turn and 10+len(text)/4.
	InputTokens, OutputTokens int64
	// Status, when not 0 or 200, answers with this status and an error
	// body instead.
	Status int
	// Match, when set, must occur in the conversation's last message (the
	// user's text or a tool's result), else the server answers 400: the
	// script and the agent went different ways.
	Match string
	// ResetMidStream sends the first part of the reply, then resets the
	// connection (TCP RST).
	ResetMidStream bool
	// StallMidStream sends the first part of the reply, then sends
	// nothing until the client goes away.
	StallMidStream bool
	// Delay is waited before answering.
	Delay time.Duration
	// EventDelay is waited between a stream's events: a model that
	// writes slowly, still writing when a client hangs up.
	EventDelay time.Duration
	// AnsweredBy, when set, is the model the reply says answered, in
	// place of the one asked for (an upstream that serves another).
	AnsweredBy string
	// CacheReadTokens, in the messages flavour, are prompt tokens read
	// from Anthropic's prompt cache, reported apart from input_tokens
	// (cache_read_input_tokens) as Anthropic does; Reported counts them
	// as input.
	CacheReadTokens int64
	// NoUsage leaves the usage out of the reply, streamed or not (an
	// upstream that does not report it).
	NoUsage bool
}

// Flavour names, as gateway.Flavour spells them.
const (
	Chat      = "openai-chat"
	Responses = "openai-responses"
	Messages  = "anthropic-messages"
)

// Received is a request the server got: every request, whatever its
// method and path, so a test sees what reached the upstream. Flavour is
// empty for a path that is no flavour's endpoint.
type Received struct {
	Flavour string
	Method  string
	Path    string
	Query   string
	Header  http.Header
	Body    []byte
	Turn    int
	Stream  bool
	Model   string
	// Aside is the Match of the side reply that answered the request
	// (SetAsides), empty for a step of the script.
	Aside string
	// CountTokens marks a messages token count (POST
	// .../messages/count_tokens): no step of the script, no usage.
	CountTokens bool
}

// Aside is a reply for a client's side requests: those a CLI sends next
// to its loop, such as a small model asked for a session title or a
// summary. They hold no assistant turn of the loop, so the script would
// answer them with its first step.
type Aside struct {
	// Match must occur in the request's system prompt (the messages
	// flavour's system, the responses flavour's instructions, the chat
	// flavour's system messages) or its last message.
	Match string
	Reply Reply
}

// Server is a running scripted model server.
type Server struct {
	// URL is the base URL, http://127.0.0.1:PORT; every flavour is
	// served under it and under URL/v1.
	URL string
	// Key, when set, is the API key the server demands (Bearer or
	// x-api-key); a request without it gets 401.
	Key string

	script []Reply
	l      net.Listener
	srv    *http.Server

	mu       sync.Mutex
	asides   []Aside
	received []Received
	reported [2]int64       // input and output tokens the replies reported
	resp     map[string]int // response id → turn, for previous_response_id
	respSeq  int
}

// New starts a server on 127.0.0.1 that follows script and demands key
// (empty: none). Close stops it.
func New(script []Reply, key string) (*Server, error) {
	return Listen("127.0.0.1:0", script, key)
}

// Listen is New on addr (host:port): an address a pod of a test cluster
// reaches, say.
func Listen(addr string, script []Reply, key string) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + l.Addr().String(), Key: key, script: script, l: l, resp: map[string]int{}}
	s.srv = &http.Server{Handler: s}
	go s.srv.Serve(l)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// SetAsides replaces the server's side replies: a request that matches one
// (the first in order) gets its reply, whatever the conversation holds,
// and the script is not consulted.
func (s *Server) SetAsides(asides ...Aside) {
	s.mu.Lock()
	s.asides = append([]Aside(nil), asides...)
	s.mu.Unlock()
}

// aside returns the side reply for a request's system prompt and last
// message, if one matches.
func (s *Server) aside(system, last string) (Aside, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.asides {
		if a.Match != "" && (strings.Contains(system, a.Match) || strings.Contains(last, a.Match)) {
			return a, true
		}
	}
	return Aside{}, false
}

// Received returns the requests so far, oldest first.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// Reported returns the input and output tokens the server's replies
// reported so far, in their bodies or streams: the upstream's own usage,
// which a gateway's records must add up to.
func (s *Server) Reported() (in, out int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reported[0], s.reported[1]
}

func (s *Server) report(in, out int64) {
	s.mu.Lock()
	s.reported[0] += in
	s.reported[1] += out
	s.mu.Unlock()
}

// Usage returns the usage the script reports for step turn of a request
// with the given flavour, as the server computes defaults.
func (s *Server) Usage(turn int) (in, out int64) {
	if turn >= len(s.script) {
		return 0, 0
	}
	return usageOf(s.script[turn], turn)
}

func usageOf(r Reply, turn int) (int64, int64) {
	in, out := r.InputTokens, r.OutputTokens
	if in == 0 {
		in = int64(100 + turn)
	}
	if out == 0 {
		out = int64(10 + len(r.Text)/4)
	}
	return in, out
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p := strings.TrimSuffix(r.URL.Path, "/")
	rec := Received{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	recorded := false
	defer func() {
		if !recorded {
			s.mu.Lock()
			s.received = append(s.received, rec)
			s.mu.Unlock()
		}
	}()
	if s.Key != "" {
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if got == "" {
			got = r.Header.Get("X-Api-Key")
		}
		if got != s.Key {
			httpError(w, http.StatusUnauthorized, "wrong API key")
			return
		}
	}
	var flavour string
	switch {
	case strings.HasSuffix(p, "/messages/count_tokens"):
		// Anthropic's token count: free, no reply from the model. The
		// estimate is the gateway's rule, a token per 3 bytes.
		rec.Flavour, rec.CountTokens = Messages, true
		var req request
		if r.Method != http.MethodPost || readExactly(body, &req) != nil {
			httpError(w, http.StatusBadRequest, "count_tokens takes a POST of a JSON messages request")
			return
		}
		rec.Model = req.Model
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]int{"input_tokens": (len(body) + 2) / 3})
		return
	case strings.HasSuffix(p, "/chat/completions"):
		flavour = Chat
	case strings.HasSuffix(p, "/responses"):
		flavour = Responses
	case strings.HasSuffix(p, "/messages"):
		flavour = Messages
	case strings.HasSuffix(p, "/models"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"scripted","object":"model","owned_by":"gatewaytest"}]}`)
		return
	default:
		httpError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
		return
	}
	var req request
	if err := readExactly(body, &req); err != nil {
		httpError(w, http.StatusBadRequest, "the body is not JSON: "+err.Error())
		return
	}
	turn, last := s.conversation(flavour, &req)
	side, isAside := s.aside(req.systemText(), last)
	rec.Flavour, rec.Turn, rec.Stream, rec.Model, rec.Aside = flavour, turn, req.Stream, req.Model, side.Match
	s.mu.Lock()
	s.received = append(s.received, rec)
	recorded = true
	s.mu.Unlock()
	var reply Reply
	switch {
	case isAside:
		reply = side.Reply
	case turn >= len(s.script):
		httpError(w, http.StatusBadRequest, fmt.Sprintf("the script has %s and the conversation already has %d assistant turns: the script needs a reply %d", plural(len(s.script), "reply", "replies"), turn, turn+1))
		return
	default:
		reply = s.script[turn]
	}
	if reply.Match != "" && !strings.Contains(last, reply.Match) {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("reply %d expects the last message to contain %q; it is %q", turn+1, reply.Match, cut(last, 300)))
		return
	}
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		httpError(w, reply.Status, fmt.Sprintf("scripted error %d at reply %d", reply.Status, turn+1))
		return
	}
	a := &answer{Reply: reply, turn: turn, model: firstNonEmpty(reply.AnsweredBy, req.Model, "scripted"), includeUsage: req.StreamOptions.IncludeUsage && !reply.NoUsage}
	a.in, a.out = usageOf(reply, turn)
	for i := range a.ToolCalls {
		if a.ToolCalls[i].ID == "" {
			a.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", turn, i)
		}
		if a.ToolCalls[i].Arguments == "" {
			a.ToolCalls[i].Arguments = "{}"
		}
	}
	if flavour == Responses {
		s.mu.Lock()
		s.respSeq++
		a.id = fmt.Sprintf("resp_%d", s.respSeq)
		s.resp[a.id] = turn
		s.mu.Unlock()
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		if json.NewEncoder(w).Encode(a.whole(flavour)) == nil && !reply.NoUsage {
			s.report(a.in+a.cached(flavour), a.out)
		}
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	events := a.events(flavour)
	rc := http.NewResponseController(w)
	for i, ev := range events {
		if i > 0 && reply.EventDelay > 0 {
			select {
			case <-time.After(reply.EventDelay):
			case <-r.Context().Done():
				return
			}
		}
		if i == 1 && (reply.ResetMidStream || reply.StallMidStream) {
			rc.Flush()
			if reply.StallMidStream {
				<-r.Context().Done()
				return
			}
			conn, _, err := rc.Hijack()
			if err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					tc.SetLinger(0) // Close sends RST
				}
				conn.Close()
			}
			return
		}
		if ev.name != "" {
			fmt.Fprintf(w, "event: %s\n", ev.name)
		}
		fmt.Fprintf(w, "data: %s\n\n", ev.data)
		rc.Flush()
	}
	// The stream reported its usage when it carried it: the chat API
	// only when asked.
	if !reply.NoUsage && (flavour != Chat || a.includeUsage) {
		s.report(a.in+a.cached(flavour), a.out)
	}
}

// readExactly reads a request's fields as an upstream does: by their
// exact names (Go's decoder alone would match "MODEL" for "model").
func readExactly(body []byte, req *request) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	exact := map[string]json.RawMessage{}
	for _, k := range []string{"model", "stream", "stream_options", "messages", "input", "previous_response_id", "system", "instructions"} {
		if v, ok := m[k]; ok {
			exact[k] = v
		}
	}
	b, err := json.Marshal(exact)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, req)
}

// request is the part of a request of any flavour the server reads.
type request struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages           []json.RawMessage `json:"messages"`
	Input              json.RawMessage   `json:"input"`
	PreviousResponseID string            `json:"previous_response_id"`
	// System is the messages flavour's system prompt (text or blocks);
	// Instructions the responses flavour's.
	System       json.RawMessage `json:"system"`
	Instructions json.RawMessage `json:"instructions"`
}

// systemText is a request's system prompt as text, in any flavour: the
// chat flavour's system and developer messages included.
func (req *request) systemText() string {
	text := textOf(req.System) + textOf(req.Instructions)
	for _, raw := range req.Messages {
		var m message
		if json.Unmarshal(raw, &m) == nil && (m.Role == "system" || m.Role == "developer") {
			text += textOf(m.Content)
		}
	}
	return text
}

type message struct {
	Role    string          `json:"role"`
	Type    string          `json:"type"`
	Content json.RawMessage `json:"content"`
	Output  json.RawMessage `json:"output"`
}

// conversation returns how many assistant turns the conversation holds
// and the text of its last message.
func (s *Server) conversation(flavour string, req *request) (int, string) {
	var msgs []message
	if flavour == Responses {
		var text string
		if json.Unmarshal(req.Input, &text) == nil {
			msgs = []message{{Role: "user", Content: req.Input}}
		} else {
			_ = json.Unmarshal(req.Input, &msgs)
		}
	} else {
		for _, raw := range req.Messages {
			var m message
			_ = json.Unmarshal(raw, &m)
			msgs = append(msgs, m)
		}
	}
	turns := 0
	prevAssistant := false
	for _, m := range msgs {
		assistant := m.Role == "assistant" || m.Type == "function_call"
		// In the responses API one reply is several items (a message and
		// function calls): consecutive ones are one turn.
		if assistant && !(flavour == Responses && prevAssistant) {
			turns++
		}
		prevAssistant = assistant
	}
	if req.PreviousResponseID != "" {
		s.mu.Lock()
		if t, ok := s.resp[req.PreviousResponseID]; ok {
			turns += t + 1
		}
		s.mu.Unlock()
	}
	last := ""
	if len(msgs) > 0 {
		m := msgs[len(msgs)-1]
		last = textOf(m.Content) + textOf(m.Output)
	}
	return turns, last
}

// textOf flattens a content value: a string, or parts with text or
// content.
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return string(raw)
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
		b.WriteString(textOf(p.Content))
	}
	return b.String()
}

func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]string{"type": "scripted_error", "message": msg}})
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// plural is "1 reply" or "n replies".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
