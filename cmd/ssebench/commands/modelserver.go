package commands

import (
	"errors"
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
)

// defaultModelServerAddr is where `ssebench model-server` listens unless
// told otherwise: the address examples/models/scripted.yaml names.
const defaultModelServerAddr = "127.0.0.1:4010"

func newCmdModelServer() *cobra.Command {
	var script, listen, key string
	cmd := &cobra.Command{
		Use:   "model-server --script FILE [--listen 127.0.0.1:PORT] [--key KEY]",
		Short: "Serve a scripted model: try a model-backed agent offline, no key, no network",
		Long: `Serve the replies of a script file as a model API on this machine, until
Ctrl-C: OpenAI chat completions (/v1/chat/completions), OpenAI responses
(/v1/responses) and Anthropic messages (/v1/messages), streaming or not,
with tool calls and token usage. Reply N of the script (counted from 1)
answers a request whose conversation already holds N-1 assistant turns,
so an agent's tool-use loop follows the script step by step; a request
the script does not expect gets 400 with the reason, naming the reply.

A model file pointing at it (examples/models/scripted.yaml) gives a run
its model: ssebench run --agent loop --model-file examples/models/scripted.yaml.
The script format is in docs/models.md; examples/models/ has scripts for
agents/loop and agents/codex on the example task kvconf-12-afb9ee1.`,
		Example: `  ssebench model-server --script examples/models/loop-kvconf.script.yaml
  ssebench model-server --script examples/models/codex.script.yaml --listen 127.0.0.1:4011`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if script == "" {
				return errors.New("--script is required: pass a script file, e.g. --script examples/models/loop-kvconf.script.yaml")
			}
			if _, _, err := net.SplitHostPort(listen); err != nil {
				return fmt.Errorf("--listen %q is not HOST:PORT: pass e.g. --listen %s", listen, defaultModelServerAddr)
			}
			replies, err := gatewaytest.LoadScript(script)
			if err != nil {
				return err
			}
			srv, err := gatewaytest.Listen(listen, replies, key)
			if err != nil {
				return fmt.Errorf("listening on %s: %w (pass another --listen, and the same port in the model file's base_url)", listen, err)
			}
			defer srv.Close()
			fmt.Fprintf(cmd.ErrOrStderr(), "serving %s (%s) at %s/v1 (openai-chat, openai-responses, anthropic-messages); Ctrl-C stops it\n",
				script, pluralReplies(len(replies)), srv.URL)
			<-cmd.Context().Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&script, "script", "", "script file: the replies, in order (YAML; docs/models.md)")
	f.StringVar(&listen, "listen", defaultModelServerAddr, "address to listen on, HOST:PORT (port 0: any free port)")
	f.StringVar(&key, "key", "", "API key the server demands (Bearer or x-api-key); empty demands none")
	return cmd
}

func pluralReplies(n int) string {
	if n == 1 {
		return "1 reply"
	}
	return fmt.Sprintf("%d replies", n)
}
