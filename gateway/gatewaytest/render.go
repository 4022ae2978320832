package gatewaytest

import (
	"encoding/json"
	"fmt"
)

// answer is a reply rendered for one request.
type answer struct {
	Reply
	turn         int
	model        string
	id           string
	in, out      int64
	includeUsage bool
}

type event struct {
	name string
	data string
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

type obj = map[string]any

// chunks splits text in pieces of about 8 bytes, as a model streams it.
func chunks(s string) []string {
	var out []string
	for len(s) > 8 {
		out = append(out, s[:8])
		s = s[8:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// cached is the cached prompt tokens a reply reports apart from its
// input tokens: only Anthropic's messages do.
func (a *answer) cached(flavour string) int64 {
	if flavour == Messages {
		return a.CacheReadTokens
	}
	return 0
}

// messageUsage is a messages reply's usage.
func (a *answer) messageUsage(out int64) obj {
	u := obj{"input_tokens": a.in, "output_tokens": out}
	if a.CacheReadTokens > 0 {
		u["cache_read_input_tokens"] = a.CacheReadTokens
		u["cache_creation_input_tokens"] = 0
	}
	return u
}

// whole is the non-streaming reply body.
func (a *answer) whole(flavour string) any {
	o := a.wholeWithUsage(flavour)
	if a.NoUsage {
		delete(o, "usage")
	}
	return o
}

func (a *answer) wholeWithUsage(flavour string) obj {
	switch flavour {
	case Responses:
		return a.response("completed")
	case Messages:
		content := []any{}
		if a.Text != "" {
			content = append(content, obj{"type": "text", "text": a.Text})
		}
		for _, tc := range a.ToolCalls {
			content = append(content, obj{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": json.RawMessage(tc.Arguments)})
		}
		return obj{"id": fmt.Sprintf("msg_%d", a.turn), "type": "message", "role": "assistant", "model": a.model,
			"content": content, "stop_reason": a.stopReason(), "stop_sequence": nil,
			"usage": a.messageUsage(a.out)}
	default:
		msg := obj{"role": "assistant", "content": nil}
		if a.Text != "" {
			msg["content"] = a.Text
		}
		if len(a.ToolCalls) > 0 {
			var tcs []any
			for _, tc := range a.ToolCalls {
				tcs = append(tcs, obj{"id": tc.ID, "type": "function", "function": obj{"name": tc.Name, "arguments": tc.Arguments}})
			}
			msg["tool_calls"] = tcs
		}
		return obj{"id": fmt.Sprintf("chatcmpl-%d", a.turn), "object": "chat.completion", "created": 1700000000, "model": a.model,
			"choices": []any{obj{"index": 0, "message": msg, "finish_reason": a.finishReason()}},
			"usage":   obj{"prompt_tokens": a.in, "completion_tokens": a.out, "total_tokens": a.in + a.out}}
	}
}

func (a *answer) finishReason() string {
	if len(a.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (a *answer) stopReason() string {
	if len(a.ToolCalls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// outputItems are the responses API's output items.
func (a *answer) outputItems() []obj {
	var items []obj
	if a.Text != "" {
		items = append(items, obj{"type": "message", "id": fmt.Sprintf("msg_%d", a.turn), "status": "completed", "role": "assistant",
			"content": []any{obj{"type": "output_text", "text": a.Text, "annotations": []any{}}}})
	}
	for i, tc := range a.ToolCalls {
		items = append(items, obj{"type": "function_call", "id": fmt.Sprintf("fc_%d_%d", a.turn, i), "call_id": tc.ID,
			"name": tc.Name, "arguments": tc.Arguments, "status": "completed"})
	}
	return items
}

func (a *answer) response(status string) obj {
	r := obj{"id": a.id, "object": "response", "created_at": 1700000000, "status": status, "model": a.model,
		"output": []obj{}, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}}
	if status == "completed" {
		r["output"] = a.outputItems()
		if a.NoUsage {
			return r
		}
		r["usage"] = obj{"input_tokens": a.in, "output_tokens": a.out, "total_tokens": a.in + a.out,
			"input_tokens_details": obj{"cached_tokens": 0}, "output_tokens_details": obj{"reasoning_tokens": 0}}
	}
	return r
}

// events is the streamed reply.
func (a *answer) events(flavour string) []event {
	switch flavour {
	case Responses:
		return a.responseEvents()
	case Messages:
		return a.messageEvents()
	default:
		return a.chatEvents()
	}
}

func (a *answer) chatEvents() []event {
	id := fmt.Sprintf("chatcmpl-%d", a.turn)
	chunk := func(delta obj, finish any) event {
		return event{data: js(obj{"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": a.model,
			"choices": []any{obj{"index": 0, "delta": delta, "finish_reason": finish}}})}
	}
	evs := []event{chunk(obj{"role": "assistant", "content": ""}, nil)}
	for _, c := range chunks(a.Text) {
		evs = append(evs, chunk(obj{"content": c}, nil))
	}
	for i, tc := range a.ToolCalls {
		evs = append(evs, chunk(obj{"tool_calls": []any{obj{"index": i, "id": tc.ID, "type": "function", "function": obj{"name": tc.Name, "arguments": ""}}}}, nil))
		for _, c := range chunks(tc.Arguments) {
			evs = append(evs, chunk(obj{"tool_calls": []any{obj{"index": i, "function": obj{"arguments": c}}}}, nil))
		}
	}
	evs = append(evs, chunk(obj{}, a.finishReason()))
	if a.includeUsage {
		evs = append(evs, event{data: js(obj{"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": a.model,
			"choices": []any{}, "usage": obj{"prompt_tokens": a.in, "completion_tokens": a.out, "total_tokens": a.in + a.out}})})
	}
	return append(evs, event{data: "[DONE]"})
}

func (a *answer) responseEvents() []event {
	seq := 0
	var evs []event
	emit := func(typ string, fields obj) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		evs = append(evs, event{name: typ, data: js(fields)})
	}
	emit("response.created", obj{"response": a.response("in_progress")})
	emit("response.in_progress", obj{"response": a.response("in_progress")})
	for i, item := range a.outputItems() {
		switch item["type"] {
		case "message":
			start := obj{"type": "message", "id": item["id"], "status": "in_progress", "role": "assistant", "content": []any{}}
			emit("response.output_item.added", obj{"output_index": i, "item": start})
			emit("response.content_part.added", obj{"item_id": item["id"], "output_index": i, "content_index": 0, "part": obj{"type": "output_text", "text": "", "annotations": []any{}}})
			for _, c := range chunks(a.Text) {
				emit("response.output_text.delta", obj{"item_id": item["id"], "output_index": i, "content_index": 0, "delta": c})
			}
			emit("response.output_text.done", obj{"item_id": item["id"], "output_index": i, "content_index": 0, "text": a.Text})
			emit("response.content_part.done", obj{"item_id": item["id"], "output_index": i, "content_index": 0, "part": obj{"type": "output_text", "text": a.Text, "annotations": []any{}}})
		case "function_call":
			start := obj{"type": "function_call", "id": item["id"], "call_id": item["call_id"], "name": item["name"], "arguments": "", "status": "in_progress"}
			emit("response.output_item.added", obj{"output_index": i, "item": start})
			args, _ := item["arguments"].(string)
			for _, c := range chunks(args) {
				emit("response.function_call_arguments.delta", obj{"item_id": item["id"], "output_index": i, "delta": c})
			}
			emit("response.function_call_arguments.done", obj{"item_id": item["id"], "output_index": i, "arguments": args})
		}
		emit("response.output_item.done", obj{"output_index": i, "item": item})
	}
	emit("response.completed", obj{"response": a.response("completed")})
	return evs
}

func (a *answer) messageEvents() []event {
	var evs []event
	emit := func(typ string, fields obj) {
		fields["type"] = typ
		evs = append(evs, event{name: typ, data: js(fields)})
	}
	start := obj{"id": fmt.Sprintf("msg_%d", a.turn), "type": "message", "role": "assistant", "model": a.model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": a.messageUsage(1)}
	if a.NoUsage {
		delete(start, "usage")
	}
	emit("message_start", obj{"message": start})
	// Anthropic's streams carry pings (one after the start here): a
	// client must pass over them.
	emit("ping", obj{})
	idx := 0
	if a.Text != "" {
		emit("content_block_start", obj{"index": idx, "content_block": obj{"type": "text", "text": ""}})
		for _, c := range chunks(a.Text) {
			emit("content_block_delta", obj{"index": idx, "delta": obj{"type": "text_delta", "text": c}})
		}
		emit("content_block_stop", obj{"index": idx})
		idx++
	}
	for _, tc := range a.ToolCalls {
		emit("content_block_start", obj{"index": idx, "content_block": obj{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": obj{}}})
		for _, c := range chunks(tc.Arguments) {
			emit("content_block_delta", obj{"index": idx, "delta": obj{"type": "input_json_delta", "partial_json": c}})
		}
		emit("content_block_stop", obj{"index": idx})
		idx++
	}
	delta := obj{"delta": obj{"stop_reason": a.stopReason(), "stop_sequence": nil}, "usage": obj{"output_tokens": a.out}}
	if a.NoUsage {
		delete(delta, "usage")
	}
	emit("message_delta", delta)
	emit("message_stop", obj{})
	return evs
}
