package entrypoint

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/sserun"
)

const (
	// OpenCodeAddr is where the OpenCode server listens in the container,
	// for the agent alone (SPEC.md section 4).
	OpenCodeAddr = "127.0.0.1:4096"
	// OpenCodeLog is the server's output in the results directory.
	OpenCodeLog = "opencode.log"
	// openCodeStartTimeout bounds the wait for the server to listen: it
	// reads its config and opens a database, a second or two.
	openCodeStartTimeout = 60 * time.Second
	// maxOpenCodeLog caps opencode.log as agent.log is capped: the
	// server is the agent's and prints what the agent makes it print.
	maxOpenCodeLog = 16 << 20
)

// openCodeBinary is the server's path in the tool image (runtimebin's
// OpenCodeBinary); tests point it elsewhere.
var openCodeBinary = "/usr/local/bin/opencode"

// openCode is a running OpenCode server.
type openCode struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startOpenCode starts `opencode serve` on OpenCodeAddr as the agent's user,
// when the image has the binary, with its model provider pointed at the
// run's gateway (SSE_BASE_URL, the run's token SSE_API_KEY by reference,
// model SSE_MODEL_NAME) and the run's MCP server when mcp is true. It is
// the agent's: it runs with the agent's environment and limits, and the
// end of the agent phase kills it with every other process of the agent.
// Its output goes to opencode.log in the results. It returns nil when
// there is no server.
func (e *entrypoint) startOpenCode(ctx context.Context, mcp bool, note func(string, ...any)) *openCode {
	if _, err := os.Stat(openCodeBinary); err != nil || !openCodeWanted(e.environ) {
		return nil
	}
	logf, err := os.OpenFile(filepath.Join(e.env.Results, OpenCodeLog), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		note("opening the OpenCode server's log: %v", err)
		return nil
	}
	env := withEnv(e.agentEnv(), map[string]string{
		"OPENCODE_CONFIG_CONTENT": openCodeConfig(e.environ, mcp, e.env.MCPAddr),
		// The run has no network: nothing to update, fetch or download,
		// and no plugin but the agent's own.
		"OPENCODE_DISABLE_AUTOUPDATE":      "1",
		"OPENCODE_DISABLE_MODELS_FETCH":    "1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD":    "1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
		"OPENCODE_DISABLE_SHARE":           "1",
	})
	host, port, _ := strings.Cut(OpenCodeAddr, ":")
	p := &sserun.Process{
		Args:   []string{openCodeBinary, "serve", "--hostname", host, "--port", port, "--print-logs", "--log-level", "INFO"},
		Dir:    e.workDir,
		Env:    env,
		User:   e.agent,
		Output: &cappedWriter{w: logf, limit: maxOpenCodeLog},
		// Its end must not take the agent with it; the agent's end
		// takes it.
		Beside:   true,
		OOMFirst: true,
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	oc := &openCode{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(oc.done)
		defer logf.Close()
		if _, err := p.Run(rctx); err != nil {
			note("running the OpenCode server: %v", err)
		}
	}()
	wctx, wcancel := context.WithTimeout(ctx, openCodeStartTimeout)
	defer wcancel()
	go func() {
		select {
		case <-oc.done:
			wcancel()
		case <-wctx.Done():
		}
	}()
	if err := waitListening(wctx, OpenCodeAddr); err != nil {
		note("the OpenCode server did not start (see %s): %v", OpenCodeLog, err)
		oc.stop()
		return nil
	}
	note("OpenCode server on %s for the agent (log: %s)", OpenCodeAddr, OpenCodeLog)
	return oc
}

// stop stops the server and waits for it. The end of the agent phase has
// usually killed it already.
func (oc *openCode) stop() {
	if oc == nil {
		return
	}
	oc.cancel()
	<-oc.done
}

// openCodeConfig is the server's config (OPENCODE_CONFIG_CONTENT): one
// provider, the run's gateway in the OpenAI chat completions flavour,
// whose key OpenCode reads from $SSE_API_KEY (the run's token, never the
// upstream's key), that provider's model, every tool allowed but the web,
// and the run's MCP server when it listens.
func openCodeConfig(environ []string, mcp bool, mcpAddr string) string {
	get := func(k string) string {
		for _, kv := range environ {
			if key, v, ok := strings.Cut(kv, "="); ok && key == k {
				return v
			}
		}
		return ""
	}
	cfg := map[string]any{
		"$schema":    "https://opencode.ai/config.json",
		"autoupdate": false,
		"share":      "disabled",
		"permission": map[string]string{"edit": "allow", "bash": "allow", "webfetch": "deny", "external_directory": "allow"},
	}
	base, model := get("SSE_BASE_URL"), get("SSE_MODEL_NAME")
	if base != "" && model != "" {
		cfg["provider"] = map[string]any{
			"ssebench": map[string]any{
				"npm":  "@ai-sdk/openai-compatible",
				"name": "SSEBench model gateway",
				"options": map[string]any{
					"baseURL": strings.TrimSuffix(base, "/"),
					"apiKey":  "{env:" + contract.EnvAPIKey + "}",
				},
				"models": map[string]any{model: map[string]any{"name": model}},
			},
		}
		cfg["model"] = "ssebench/" + model
		cfg["small_model"] = "ssebench/" + model
		cfg["enabled_providers"] = []string{"ssebench"}
	}
	if mcp && mcpAddr != "" {
		cfg["mcp"] = map[string]any{
			"ssebench": map[string]any{"type": "remote", "url": "http://" + mcpAddr + "/mcp", "enabled": true},
		}
	}
	b, _ := json.Marshal(cfg)
	return string(b)
}
