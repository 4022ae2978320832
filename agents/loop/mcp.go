package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpTimeout bounds connecting to the MCP server and listing its tools; a
// tool call (a build, a test run) is bounded by shellTimeout instead.
const mcpTimeout = 30 * time.Second

// mcpTools is the run's MCP server (SPEC.md section 13) as tools of the
// chat API: each MCP tool becomes a function of the same name whose
// parameters are the tool's input schema.
type mcpTools struct {
	session *mcp.ClientSession
	names   map[string]bool
	// defs are the chat API's tool definitions, in the server's order.
	defs []any
}

// mcpEndpoint is where the entrypoint serves MCP: SSE_MCP_URL when set,
// else http://$SSE_MCP_ADDR/mcp (default 127.0.0.1:3000).
func mcpEndpoint(getenv func(string) string) string {
	if u := getenv("SSE_MCP_URL"); u != "" {
		return u
	}
	addr := getenv("SSE_MCP_ADDR")
	if addr == "" {
		addr = "127.0.0.1:3000"
	}
	return "http://" + addr + "/mcp"
}

// connectMCP connects to endpoint and lists its tools. Tools whose names
// clash with the loop's own (shell, edit_file) are left out: the model
// would not know which one it calls.
func connectMCP(ctx context.Context, endpoint string) (*mcpTools, error) {
	cctx, cancel := context.WithTimeout(ctx, mcpTimeout)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "sse-loop", Version: "1"}, nil)
	cs, err := c.Connect(cctx, &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Timeout: shellTimeout + time.Minute},
		MaxRetries: 1,
	}, nil)
	if err != nil {
		return nil, err
	}
	m := &mcpTools{session: cs, names: map[string]bool{}}
	for t, err := range cs.Tools(cctx, nil) {
		if err != nil {
			cs.Close()
			return nil, fmt.Errorf("listing the MCP tools: %w", err)
		}
		if t.Name == "shell" || t.Name == "edit_file" {
			continue
		}
		schema := t.InputSchema
		if schema == nil {
			schema = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		m.names[t.Name] = true
		m.defs = append(m.defs, map[string]any{"type": "function", "function": map[string]any{
			"name": t.Name, "description": t.Description, "parameters": schema,
		}})
	}
	return m, nil
}

// has says whether name is one of the server's tools.
func (m *mcpTools) has(name string) bool { return m != nil && m.names[name] }

// list names the tools, for the prompt and the log.
func (m *mcpTools) list() string {
	var names []string
	for _, d := range m.defs {
		names = append(names, d.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	return strings.Join(names, ", ")
}

// call calls one tool and returns what the model reads back: the text of
// the result, "error: …" first when the tool failed.
func (m *mcpTools) call(ctx context.Context, name, args string) string {
	var params map[string]any
	if strings.TrimSpace(args) != "" {
		if err := json.Unmarshal([]byte(args), &params); err != nil {
			return fmt.Sprintf("error: the arguments of %s are not a JSON object: %v", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, shellTimeout)
	defer cancel()
	res, err := m.session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: params})
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	if res.IsError {
		b.WriteString("error: ")
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		b.Write(data)
	}
	return cutTail(b.String(), maxToolOutput)
}

func (m *mcpTools) close() {
	if m != nil {
		m.session.Close()
	}
}
