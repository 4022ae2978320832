package commands

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/assemble/agentimage"
	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/task"
)

func newCmdAssemble(g *options.Global) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "assemble",
		Short: "Assemble tool and agent images on top of a case image, without Docker",
		Example: `  ssebench assemble tool --case localhost:5000/ssebench/case/examples/kvconf-12-afb9ee1
  ssebench assemble agent --tool localhost:5000/ssebench/tool/kvconf-12-afb9ee1:0.1.0-dev --agent dummy`,
	}
	cmd.AddCommand(newCmdAssembleTool(g), newCmdAssembleAgent(g))
	return groupCommand(cmd)
}

type assembleToolOptions struct {
	Case, Source, Task, Runtime, Platform string
	Push, NoStore, JSON                   bool
}

func newCmdAssembleTool(g *options.Global) *cobra.Command {
	o := &assembleToolOptions{}
	cmd := &cobra.Command{
		Use:   "tool --case REF [--source DIR] [--task ID] [--runtime REF] [--platform linux/ARCH] [--push]",
		Short: "Turn a case image into the tool image of sandbox mode",
		Long: `Compute the tool image (SPEC.md section 4) from the case image's layers:
accounts, modes, /ssebench-repo, SOURCE_DIR owned by model with a fresh
one-commit repository, and the runtime image's layers. The case layers are
reused as they are. The result goes to the local store as
REGISTRY/tool/<task>:<VERSION> (and to the registry with --push); the command
prints its name and digest.

The runtime image is --runtime, else SSEBENCH_RUNTIME_IMAGE, else
REGISTRY/runtime:<VERSION>. SOURCE_DIR is --source, else the task's
config.yaml under the SSEBench home. SOURCE_DATE_EPOCH sets the commit time;
the default is the case image's creation time. When the tool image made
before (store or registry) came from the same case image, SOURCE_DIR and
time, its own layers are reused and no case layer is read.`,
		Example: `  ssebench assemble tool --case localhost:5000/ssebench/case/examples/kvconf-12-afb9ee1
  ssebench assemble tool --case localhost:5000/ssebench/case/examples/kvconf-12-afb9ee1 --push`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Case == "" {
				return fmt.Errorf("--case is required: pass the case image, e.g. --case localhost:5000/ssebench/case/examples/kvconf-12-afb9ee1")
			}
			p, err := options.ParsePlatform(o.Platform)
			if err != nil {
				return err
			}
			e, done, err := newEnv(g, cmd, o.Runtime)
			if err != nil {
				return err
			}
			defer done()
			id, err := taskOf(o.Task, o.Case)
			if err != nil {
				return err
			}
			src := o.Source
			if src == "" {
				if src, err = task.SourceOf(e.Home, id); err != nil {
					return err
				}
			}
			b, err := e.Tool(cmd.Context(), pipeline.ToolRequest{
				Case: o.Case, Task: id, SourceDir: src, Platform: p, Push: o.Push, NoStore: o.NoStore,
			})
			if err != nil {
				return err
			}
			return printResult(cmd.OutOrStdout(), o.JSON, b.Summary(), fmt.Sprintf("%s@%s", b.Name, b.Digest))
		},
	}
	f := cmd.Flags()
	addJSONFlag(cmd, &o.JSON)
	f.StringVar(&o.Case, "case", "", "case image reference (required)")
	f.StringVar(&o.Source, "source", "", "SOURCE_DIR in the case image (default: source in the task's config.yaml)")
	f.StringVar(&o.Task, "task", "", "task id (default: the last part of the case image's name)")
	f.StringVar(&o.Runtime, "runtime", "", "runtime image (default $SSEBENCH_RUNTIME_IMAGE, else REGISTRY/runtime:VERSION)")
	f.StringVar(&o.Platform, "platform", "", "platform to assemble for (default: the case image's)")
	f.BoolVar(&o.Push, "push", false, "push the tool image to its registry too")
	f.BoolVar(&o.NoStore, "no-store", false, "with --push: do not name the image in the local store (not needed: a pushed image's registry layers are never downloaded)")
	_ = f.MarkHidden("no-store")
	return cmd
}

type assembleAgentOptions struct {
	Tool, Agent, Task, Platform string
	BuildArgs                   []string
	Push, Explain, JSON         bool
}

func newCmdAssembleAgent(g *options.Global) *cobra.Command {
	o := &assembleAgentOptions{}
	cmd := &cobra.Command{
		Use:   "agent --tool REF --agent FOLDER [--task ID] [--build-arg K=V] [--explain] [--push]",
		Short: "Build the agent image on a tool image: natively, or with BuildKit when a step must run",
		Long: `Read agents/<FOLDER>/Dockerfile with BuildKit's parser. When every
instruction can be applied without running anything (FROM ssebench-agent, ARG,
ENV, LABEL, WORKDIR, USER, CMD, ENTRYPOINT, EXPOSE, SHELL, STOPSIGNAL, COPY/ADD
of local files or --from=workspace), assemble it natively: config changes and
one layer per COPY/ADD. Otherwise build it with BuildKit. Either way the
build is blind: ssebench-agent is the tool image without /ssebench,
/ssebench-repo and the runtime's state, and workspace holds only VERSION and
the agent's own folder. The layers it adds are then checked entry by entry
against the agent policy (docs/agents.md) and grafted onto the real tool
image; a refusal names the layer, the entry and the rule. The image is stored
as lowercase(REGISTRY/agent-<name>/<task>:<version>).`,
		Example: `  ssebench assemble agent --tool localhost:5000/ssebench/tool/kvconf-12-afb9ee1:0.1.0-dev --agent dummy
  ssebench assemble agent --tool localhost:5000/ssebench/tool/kvconf-12-afb9ee1:0.1.0-dev --agent apt-demo --explain`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			args, err := parseBuildArgs(o.BuildArgs)
			if err != nil {
				return err
			}
			if o.Explain {
				return explainAgent(cmd, g, o.Agent, args)
			}
			return runAssembleAgent(cmd, g, o, args)
		},
	}
	f := cmd.Flags()
	addJSONFlag(cmd, &o.JSON)
	f.StringVar(&o.Tool, "tool", "", "tool image reference (required)")
	f.StringVar(&o.Agent, "agent", "", "agent folder under agents/ (required)")
	f.StringVar(&o.Task, "task", "", "task id (default: the last part of the tool image's name)")
	f.StringArrayVar(&o.BuildArgs, "build-arg", nil, "build argument K=V (repeatable)")
	f.StringVar(&o.Platform, "platform", "", "platform (default: the tool image's)")
	f.BoolVar(&o.Explain, "explain", false, "print which path a build takes (native or BuildKit) and why, and build nothing")
	f.BoolVar(&o.Push, "push", false, "push the agent image to its registry too")
	return cmd
}

func parseBuildArgs(kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--build-arg %q is not KEY=VALUE", kv)
		}
		m[k] = v
	}
	return m, nil
}

// taskOf is the task of --task (flag), else the one the image ref names.
func taskOf(flag, ref string) (string, error) {
	id := flag
	if id == "" {
		id = naming.TaskOfRef(ref)
	}
	return id, task.CheckID("--task", id)
}

// explainAgent is assemble agent --explain: a plan, as --explain
// promises: it reads the Dockerfile, says which path a build takes and
// why, and builds nothing.
func explainAgent(cmd *cobra.Command, g *options.Global, folder string, args map[string]string) error {
	if folder == "" {
		return fmt.Errorf("--agent is required: pass an agent folder under agents/")
	}
	home, err := g.HomeDir()
	if err != nil {
		return err
	}
	a, err := agent.Load(home, folder)
	if err != nil {
		return err
	}
	plan, err := agentimage.LoadPlan(a.Dir, args)
	if err != nil {
		return err
	}
	_, err = io.WriteString(cmd.OutOrStdout(), plan.Explain())
	return err
}

func runAssembleAgent(cmd *cobra.Command, g *options.Global, o *assembleAgentOptions, args map[string]string) error {
	if o.Tool == "" || o.Agent == "" {
		return fmt.Errorf("--tool and --agent are required: pass the tool image and an agent folder under agents/")
	}
	p, err := options.ParsePlatform(o.Platform)
	if err != nil {
		return err
	}
	e, done, err := newEnv(g, cmd, "")
	if err != nil {
		return err
	}
	defer done()
	id, err := taskOf(o.Task, o.Tool)
	if err != nil {
		return err
	}
	req := pipeline.AgentRequest{Tool: o.Tool, Folder: o.Agent, Task: id, BuildArgs: args, Platform: p, Push: o.Push}
	b, err := e.Agent(cmd.Context(), req)
	if err != nil {
		return err
	}
	return printResult(cmd.OutOrStdout(), o.JSON, b.Summary(), fmt.Sprintf("%s@%s", b.Name, b.Digest))
}
