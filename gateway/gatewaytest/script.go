package gatewaytest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/42-b3yond-6ug/ssebench/internal/yamlerr"
)

// maxScriptFile bounds a script file: replies a person wrote.
const maxScriptFile = 16 << 20

// ScriptFile is a script as a YAML file (`ssebench model-server --script`):
//
//	replies:
//	  - match: Find the bug          # optional: the last message must contain it
//	    text: I will fix the parser.
//	    tool_calls:
//	      - name: edit_file
//	        arguments: {path: /src/x.go, old_text: a, new_text: b}
//	    input_tokens: 1000           # optional usage (default 99+N for reply N, 10+len(text)/4)
//	    output_tokens: 80
//	  - text: Done.
//
// Reply N (counted from 1) answers the request whose conversation holds
// N-1 assistant turns.
// Unknown keys are an error.
type ScriptFile struct {
	Replies []ScriptReply `yaml:"replies"`
}

// ScriptReply is one reply of a ScriptFile.
type ScriptReply struct {
	Match        string           `yaml:"match"`
	Text         string           `yaml:"text"`
	ToolCalls    []ScriptToolCall `yaml:"tool_calls"`
	InputTokens  int64            `yaml:"input_tokens"`
	OutputTokens int64            `yaml:"output_tokens"`
	// Status, when not 0 or 200, answers with this HTTP status and an
	// error body: an upstream that fails.
	Status int `yaml:"status"`
	// Delay is waited before answering ("2s").
	Delay string `yaml:"delay"`
}

// ScriptToolCall is a tool call of a ScriptReply: Arguments is a mapping
// (sent as its JSON) or a string of JSON.
type ScriptToolCall struct {
	ID        string    `yaml:"id"`
	Name      string    `yaml:"name"`
	Arguments yaml.Node `yaml:"arguments"`
}

// LoadScript reads a script file (ScriptFile) into the replies a Server
// follows.
func LoadScript(path string) ([]Reply, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the script: %w (pass a script file, e.g. examples/models/loop-kvconf.script.yaml)", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxScriptFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading the script %s: %w", path, err)
	}
	if len(b) > maxScriptFile {
		return nil, fmt.Errorf("the script %s is over %d MiB: a script is replies a person wrote", path, maxScriptFile>>20)
	}
	replies, err := ParseScript(b)
	if err != nil {
		return nil, fmt.Errorf("the script %s: %w", path, err)
	}
	return replies, nil
}

// ParseScript parses a script file's content (ScriptFile).
func ParseScript(b []byte) ([]Reply, error) {
	var sf ScriptFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&sf); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("it is empty: want a list of replies under the key replies")
		}
		return nil, errors.New(yamlerr.Message(err))
	}
	if len(sf.Replies) == 0 {
		return nil, errors.New("it has no replies: want a list of replies under the key replies")
	}
	out := make([]Reply, 0, len(sf.Replies))
	for i, r := range sf.Replies {
		rep := Reply{Match: r.Match, Text: r.Text, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, Status: r.Status}
		if r.InputTokens < 0 || r.OutputTokens < 0 {
			return nil, fmt.Errorf("reply %d: input_tokens and output_tokens must not be negative", i+1)
		}
		if r.Status != 0 && (r.Status < 100 || r.Status > 599) {
			return nil, fmt.Errorf("reply %d: status %d is not an HTTP status", i+1, r.Status)
		}
		if r.Delay != "" {
			d, err := time.ParseDuration(r.Delay)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("reply %d: delay %q is not a duration such as 2s", i+1, r.Delay)
			}
			rep.Delay = d
		}
		for j, tc := range r.ToolCalls {
			if strings.TrimSpace(tc.Name) == "" {
				return nil, fmt.Errorf("reply %d, tool call %d: name is required", i+1, j+1)
			}
			args, err := arguments(&tc.Arguments)
			if err != nil {
				return nil, fmt.Errorf("reply %d, tool call %d (%s): arguments: %w", i+1, j+1, tc.Name, err)
			}
			rep.ToolCalls = append(rep.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Name, Arguments: args})
		}
		out = append(out, rep)
	}
	return out, nil
}

// arguments is a tool call's arguments as JSON object text: a mapping
// converted, a string checked to be one.
func arguments(n *yaml.Node) (string, error) {
	switch {
	case n.Kind == 0:
		return "{}", nil
	case n.Kind == yaml.ScalarNode && n.Tag == "!!str":
		var v map[string]any
		if err := json.Unmarshal([]byte(n.Value), &v); err != nil {
			return "", errors.New("a string must hold a JSON object")
		}
		return n.Value, nil
	case n.Kind == yaml.MappingNode:
		var v map[string]any
		if err := n.Decode(&v); err != nil {
			return "", err
		}
		var b strings.Builder
		enc := json.NewEncoder(&b)
		// The arguments as written: "<" stays "<", not \u003c.
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return "", fmt.Errorf("cannot be JSON: %v", err)
		}
		return strings.TrimSuffix(b.String(), "\n"), nil
	}
	return "", errors.New("want a mapping, or a string of a JSON object")
}
