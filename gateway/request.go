package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The gateway decides what a request may cost from its body, and the
// upstream serves what it reads in the same body: the two must read it
// the same way. Go's decoder matches keys case-insensitively and keeps
// the last of duplicate keys; an upstream in another language matches
// exactly and may keep the first. So a generating request is read
// strictly: one JSON object, valid UTF-8, no key twice in any object, no
// two top-level keys that differ only in case, and the fields that decide
// what is served and what it costs spelled exactly and of their type.

// genRequest is what the gateway reads of a generating request.
type genRequest struct {
	Model  string
	Stream bool
	// IncludeUsage says the agent asked for a chat stream's usage itself.
	IncludeUsage bool
	// MaxTokens is the most output tokens the request allows: the larger
	// of the fields that say it (an upstream may serve either); 0 when it
	// sets none.
	MaxTokens int64
	// N is how many answers the request asks for (the chat API's n).
	N int64
	// fields is the body's top level, kept raw.
	fields map[string]json.RawMessage
}

// errBadBody is the class of a body the gateway refuses to read.
var errBadBody = errors.New("the request body is not one the gateway forwards")

// priced are the top-level fields that decide which model answers, how
// much it may write, and how many times: they must be spelled exactly.
var priced = []string{
	"model", "stream", "stream_options", "n", "max_tokens", "max_completion_tokens",
	"max_output_tokens", "tool_choice", "parallel_tool_calls", "tools", "background",
	"thinking", "reasoning", "service_tier", "best_of", "models", "fallbacks", "route",
	"audio", "modalities",
}

// maxOutputTokens bounds a request's maximum output: far above what any
// model writes in one reply, far below what a number can say.
const maxOutputTokens = 10_000_000

// maxN bounds the chat API's n: more answers than this in one request is
// not an agent's way of working.
const maxN = 8

// parseRequest reads a generating request's body strictly.
func parseRequest(f Flavour, body []byte) (*genRequest, error) {
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("%w: it is not valid UTF-8", errBadBody)
	}
	if err := checkKeys(body); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadBody, err)
	}
	q := &genRequest{N: 1}
	if err := json.Unmarshal(body, &q.fields); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadBody, err)
	}
	m := q.fields
	var err error
	if q.Model, err = stringField(m, "model"); err != nil {
		return nil, err
	}
	if q.Model == "" {
		return nil, fmt.Errorf("%w: it names no model (\"model\")", errBadBody)
	}
	if q.Stream, err = boolField(m, "stream"); err != nil {
		return nil, err
	}
	if raw, ok := m["stream_options"]; ok && !isNull(raw) {
		var so map[string]json.RawMessage
		if err := json.Unmarshal(raw, &so); err != nil {
			return nil, fmt.Errorf("%w: \"stream_options\" is not an object", errBadBody)
		}
		if err := exactKeys(so, "stream_options", "include_usage"); err != nil {
			return nil, err
		}
		if q.IncludeUsage, err = boolField(so, "include_usage"); err != nil {
			return nil, err
		}
	}
	var limits []string
	switch f {
	case OpenAIChat:
		limits = []string{"max_completion_tokens", "max_tokens"}
		n, err := intField(m, "n", maxN)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			q.N = n
		}
	case OpenAIResponses:
		limits = []string{"max_output_tokens"}
		// A background response answers at once without usage; its
		// usage would come later from an endpoint no run may use.
		bg, err := boolField(m, "background")
		if err != nil {
			return nil, err
		}
		if bg {
			return nil, fmt.Errorf("%w: background responses are not counted by the gateway: drop \"background\": true", errBadBody)
		}
	case AnthropicMessages:
		limits = []string{"max_tokens"}
	}
	for _, k := range limits {
		v, err := intField(m, k, maxOutputTokens)
		if err != nil {
			return nil, err
		}
		// The larger: with max_tokens 100 and max_completion_tokens
		// 50000 an upstream that reads the second writes 50000.
		q.MaxTokens = max(q.MaxTokens, v)
	}
	if err := checkPricing(f, m); err != nil {
		return nil, err
	}
	for _, k := range []string{"tool_choice", "tools", "thinking", "reasoning"} {
		if raw, ok := m[k]; ok && !isNull(raw) && raw[0] != '{' && raw[0] != '[' && raw[0] != '"' {
			return nil, fmt.Errorf("%w: %q is neither a string, an object nor a list", errBadBody, k)
		}
	}
	if _, err := boolField(m, "parallel_tool_calls"); err != nil {
		return nil, err
	}
	if err := checkTools(f, m); err != nil {
		return nil, err
	}
	for _, k := range routingFields {
		if raw, ok := m[k]; ok && !isNull(raw) {
			return nil, fmt.Errorf("%w: %q would let the upstream answer with another model than \"model\": name one model", errBadBody, k)
		}
	}
	return q, nil
}

// routingFields are the routers' ways (OpenRouter's, LiteLLM's) to have
// another model answer when the one named fails: a way around the run's
// allowed models.
var routingFields = []string{"models", "fallbacks", "route"}

// Tools the upstream runs itself (web search, fetching pages, running
// code, image generation, remote MCP servers) are billed apart from the
// tokens, and reach the network from outside the run's sandbox: a closed
// run must not have them. Tools the agent's side runs are fine.

// hostedFields are top-level fields that turn on such tools.
var hostedFields = map[Flavour][]string{
	OpenAIChat:        {"web_search_options"},
	AnthropicMessages: {"mcp_servers", "container"},
}

// clientTool reports whether a tool type is one the agent runs. A tool
// without a type is the agent's: the upstream's own tools are named by
// their type.
func clientTool(f Flavour, typ string) bool {
	if typ == "" {
		return true
	}
	switch f {
	case OpenAIChat:
		return typ == "function" || typ == "custom"
	case OpenAIResponses:
		return typ == "function" || typ == "custom" || typ == "local_shell"
	case AnthropicMessages:
		// No type is a custom tool; the versioned ones are Anthropic's
		// schemas for tools the client runs.
		for _, p := range []string{"bash_", "text_editor_", "computer_", "memory_"} {
			if strings.HasPrefix(typ, p) {
				return true
			}
		}
		return typ == "custom"
	}
	return false
}

func checkTools(f Flavour, m map[string]json.RawMessage) error {
	for _, k := range hostedFields[f] {
		if raw, ok := m[k]; ok && !isNull(raw) {
			return fmt.Errorf("%w: %q asks the upstream to reach out on the run's behalf, which a run may not", errBadBody, k)
		}
	}
	return checkToolList(f, m, 0)
}

// checkToolList checks m's "tools". In the responses flavour a
// "namespace" tool (Codex sends them) groups tools under a name: it is the
// agent's when every tool in it is, checked the same way, a few levels
// deep at most.
func checkToolList(f Flavour, m map[string]json.RawMessage, depth int) error {
	raw, ok := m["tools"]
	if !ok || isNull(raw) {
		return nil
	}
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil {
		return fmt.Errorf("%w: \"tools\" is not a list of objects", errBadBody)
	}
	for _, t := range tools {
		// An upstream in Go reads "Type" as "type": a hosted tool named
		// so would pass for the agent's own.
		if err := exactKeys(t, "a tool", "type", "tools"); err != nil {
			return err
		}
		typ, err := stringField(t, "type")
		if err != nil {
			return err
		}
		if f == OpenAIResponses && typ == "namespace" {
			if depth >= maxToolNesting {
				return fmt.Errorf("%w: tool namespaces nested more than %d deep", errBadBody, maxToolNesting)
			}
			if err := checkToolList(f, t, depth+1); err != nil {
				return err
			}
			continue
		}
		if !clientTool(f, typ) {
			return fmt.Errorf("%w: the tool type %q runs on the upstream (billed apart, with network access): a run may use only tools it runs itself", errBadBody, cut(typ, 60))
		}
	}
	return nil
}

// exactKeys refuses, in m (what of the body where says), two keys that
// differ only in case, and a key that reads as one of names to a
// case-insensitive reader without being spelled so. An upstream written
// in Go matches keys that way at every level, and keeps the last of two.
func exactKeys(m map[string]json.RawMessage, where string, names ...string) error {
	folded := make(map[string]string, len(m))
	for k := range m {
		f := fold(k)
		if other, ok := folded[f]; ok {
			return fmt.Errorf("%w: in %s, the keys %q and %q differ only in case", errBadBody, where, cut(other, 100), cut(k, 100))
		}
		folded[f] = k
		for _, n := range names {
			if f == n && k != n {
				return fmt.Errorf("%w: in %s, the key %q must be spelled %q", errBadBody, where, cut(k, 100), n)
			}
		}
	}
	return nil
}

// Service tiers and audio are billed at rates of their own, which the
// gateway's prices (per token, in and out) do not have: a request that
// asks for them is refused rather than counted at the wrong price.

// plainTiers are the service_tier values billed at the model's plain
// price, by flavour. "auto" on Anthropic's API may use the Priority Tier,
// OpenAI's "flex" is cheaper (counted at the plain price, on the safe
// side); "priority" and "scale" cost more.
var plainTiers = map[Flavour][]string{
	OpenAIChat:        {"auto", "default", "flex"},
	OpenAIResponses:   {"auto", "default", "flex"},
	AnthropicMessages: {"standard_only"},
}

// checkPricing refuses a service tier or audio, which the gateway cannot
// price.
func checkPricing(f Flavour, m map[string]json.RawMessage) error {
	tier, err := stringField(m, "service_tier")
	if err != nil {
		return err
	}
	if tier != "" && !slices.Contains(plainTiers[f], tier) {
		return fmt.Errorf("%w: \"service_tier\": %q is billed at a rate the gateway does not price: drop it or use %s", errBadBody, cut(tier, 40), strings.Join(plainTiers[f], " or "))
	}
	if raw, ok := m["audio"]; ok && !isNull(raw) {
		return fmt.Errorf("%w: \"audio\" output is billed at a rate the gateway does not price: ask for text", errBadBody)
	}
	if raw, ok := m["modalities"]; ok && !isNull(raw) {
		var mods []string
		if err := json.Unmarshal(raw, &mods); err != nil {
			return fmt.Errorf("%w: \"modalities\" is not a list of strings", errBadBody)
		}
		for _, x := range mods {
			if fold(x) != "text" {
				return fmt.Errorf("%w: the modality %q is billed at a rate the gateway does not price: ask for text", errBadBody, cut(x, 40))
			}
		}
	}
	return nil
}

// maxToolNesting bounds namespaces inside namespaces.
const maxToolNesting = 4

// checkKeys walks the whole body: one JSON value, an object, no key
// twice in any object, and no two top-level keys that differ only in
// case; a top-level key that is a priced field in another case is
// refused too, since some upstream may fold it.
func checkKeys(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]bool
		folded map[string]string // top level only
		key    bool              // the next token is a key
	}
	var stack []*frame
	// valueDone ends a value in the current frame; it says whether the
	// top-level object just ended.
	valueDone := func() bool {
		if len(stack) == 0 {
			return true
		}
		if top := stack[len(stack)-1]; top.object {
			top.key = true
		}
		return false
	}
	tok, err := dec.Token()
	if err == io.EOF {
		return errors.New("it is empty, not a JSON object")
	}
	if err != nil {
		return fmt.Errorf("it is not JSON: %w", err)
	}
	if tok != json.Delim('{') {
		return errors.New("it is not a JSON object")
	}
	stack = append(stack, &frame{object: true, keys: map[string]bool{}, folded: map[string]string{}, key: true})
	for {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("it is not JSON: %w", err)
		}
		top := stack[len(stack)-1]
		ended := false
		switch {
		case tok == json.Delim('}') || tok == json.Delim(']'):
			stack = stack[:len(stack)-1]
			ended = valueDone()
		case top.object && top.key:
			k := tok.(string)
			if top.keys[k] {
				return fmt.Errorf("the key %q appears twice in one object", cut(k, 100))
			}
			top.keys[k] = true
			// Audio input, at any depth of the messages, is billed at a
			// rate of its own.
			if fold(k) == "input_audio" {
				return errors.New("audio input (\"input_audio\") is billed at a rate the gateway does not price: send text")
			}
			if top.folded != nil {
				f := fold(k)
				if other, ok := top.folded[f]; ok {
					return fmt.Errorf("the keys %q and %q differ only in case", cut(other, 100), cut(k, 100))
				}
				top.folded[f] = k
				for _, p := range priced {
					if f == p && k != p {
						return fmt.Errorf("the key %q must be spelled %q", cut(k, 100), p)
					}
				}
			}
			top.key = false
		case tok == json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, key: true})
		case tok == json.Delim('['):
			stack = append(stack, &frame{})
		default:
			valueDone()
		}
		if ended {
			// Nothing may follow the object.
			if _, err := dec.Token(); err != io.EOF {
				return errors.New("something follows the JSON object")
			}
			return nil
		}
	}
}

// fold maps a key to its case-folded form, as a case-insensitive reader
// would match it (the Kelvin sign and the long s included).
func fold(s string) string { return strings.ToLower(strings.ToUpper(s)) }

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

func stringField(m map[string]json.RawMessage, k string) (string, error) {
	raw, ok := m[k]
	if !ok || isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%w: %q is not a string", errBadBody, k)
	}
	return s, nil
}

func boolField(m map[string]json.RawMessage, k string) (bool, error) {
	raw, ok := m[k]
	if !ok || isNull(raw) {
		return false, nil
	}
	switch string(raw) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%w: %q is not true or false", errBadBody, k)
}

// intField reads a positive whole number written as one (no 1.0, no
// 1e3: an upstream may read those otherwise), at most limit.
func intField(m map[string]json.RawMessage, k string, limit int64) (int64, error) {
	raw, ok := m[k]
	if !ok || isNull(raw) {
		return 0, nil
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || v < 1 || v > limit {
		return 0, fmt.Errorf("%w: %q must be a whole number from 1 to %d", errBadBody, k, limit)
	}
	return v, nil
}

// withStreamUsage sets the chat request's stream_options to ask for the
// stream's usage, whatever the agent sent there: the gateway counts
// every stream, not only those whose agent asks.
func (q *genRequest) withStreamUsage() ([]byte, error) {
	m := make(map[string]json.RawMessage, len(q.fields)+1)
	for k, v := range q.fields {
		m[k] = v
	}
	m["stream_options"] = json.RawMessage(`{"include_usage":true}`)
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("asking for the stream's usage: %w", err)
	}
	return b, nil
}
