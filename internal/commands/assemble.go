package commands

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/internal/commands/options"
	"github.com/42-b3yond-6ug/ssebench/registry"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
	"github.com/42-b3yond-6ug/ssebench/task"
)

func newCmdAssemble(g *options.Global) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "assemble",
		Short:   "Assemble tool and agent images on top of a case image, without Docker",
		Example: `  ssebench assemble tool --case localhost:5000/ssebench/case/examples/gocsv-1 --task gocsv-1 --source /src/gocsv`,
	}
	cmd.AddCommand(newCmdAssembleTool(g))
	return cmd
}

type assembleToolOptions struct {
	Case, Source, Task, Runtime, Platform string
	Push, NoStore                         bool
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
the default is the case image's creation time.`,
		Example: `  ssebench assemble tool --case localhost:5000/ssebench/case/examples/gocsv-1 --task gocsv-1
  ssebench assemble tool --case ./case@sha256:... --source /src/proj --task demo --runtime localhost:5000/ssebench/runtime:0.1.0-dev --push`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if o.Case == "" {
				return fmt.Errorf("--case is required: pass the case image, e.g. --case localhost:5000/ssebench/case/examples/gocsv-1")
			}
			names, err := g.Names()
			if err != nil {
				return err
			}
			home, err := g.HomeDir()
			if err != nil {
				return err
			}
			id := o.Task
			if id == "" {
				id = taskFromCaseRef(o.Case)
			}
			src := o.Source
			if src == "" {
				if src, err = sourceOf(home, id); err != nil {
					return err
				}
			}
			p, err := options.ParsePlatform(o.Platform)
			if err != nil {
				return err
			}
			s, err := g.OpenStore()
			if err != nil {
				return err
			}
			defer s.Close()
			ropts, err := g.RegistryOptions(s, p)
			if err != nil {
				return err
			}
			r, err := registry.NewResolver(ropts...)
			if err != nil {
				return err
			}
			caseRes, err := r.Resolve(ctx, o.Case)
			if err != nil {
				return fmt.Errorf("finding the case image: %w", err)
			}
			cf, err := caseRes.Image.ConfigFile()
			if err != nil {
				return fmt.Errorf("reading the case image %s: %w", o.Case, err)
			}
			plat := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
			if p != nil {
				plat = *p
			}
			rref := runtimebin.Ref(o.Runtime, g.Lookup(runtimebin.Env), names.Runtime())
			ropts, _ = g.RegistryOptions(s, &plat)
			rr, err := registry.NewResolver(ropts...)
			if err != nil {
				return err
			}
			rtRes, err := rr.Resolve(ctx, rref)
			if err != nil {
				return fmt.Errorf("finding the runtime image: %w", err)
			}
			if rtRes.Index == nil {
				if err := runtimebin.CheckPlatform(rref, rtRes.Image, plat); err != nil {
					return err
				}
			}

			facts, err := openFacts()
			if err != nil {
				return err
			}
			aopts := []assemble.ToolOption{
				assemble.WithSourceDir(src), assemble.WithTempDir(s.TempDir()),
				assemble.WithFacts(facts), assemble.WithRefs(o.Case, rref),
			}
			if t, ok, err := sourceDateEpoch(); err != nil {
				return err
			} else if ok {
				aopts = append(aopts, assemble.WithTime(t))
			}
			toolName := names.Tool(id)
			ref, err := name.ParseReference(toolName, name.WeakValidation)
			if err != nil {
				return fmt.Errorf("tool image name %q is not a valid reference: check REGISTRY (--registry or %s): %w", toolName, registry.RegistryEnv, err)
			}
			// The tool image made before for this task, from the store or
			// the registry: when its key matches, its own layers are
			// reused and no case layer is read.
			if prev, err := rr.Image(ctx, toolName); err == nil {
				aopts = append(aopts, assemble.WithPrevious(prev))
			}
			start := time.Now()
			ti, err := assemble.Tool(ctx, caseRes.Image, rtRes.Image, aopts...)
			if err != nil {
				return err
			}
			defer ti.Close()
			if o.NoStore && !o.Push {
				return fmt.Errorf("--no-store needs --push: the image must go somewhere")
			}
			if !o.NoStore {
				if err := s.Write(ctx, ref, ti); err != nil {
					return err
				}
			}
			d, err := ti.Digest()
			if err != nil {
				return err
			}
			how := "assembled"
			if ti.Reused {
				how = "reassembled (system and source layers reused)"
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s %s in %s (tree %s)\n", how, toolName, time.Since(start).Round(time.Millisecond), ti.TreeID)
			if o.Push {
				popts, _ := g.RegistryOptions(nil, nil)
				if err := registry.Push(ctx, toolName, ti, popts...); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", toolName, d)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Case, "case", "", "case image reference (required)")
	f.StringVar(&o.Source, "source", "", "SOURCE_DIR in the case image (default: `source` of the task's config.yaml)")
	f.StringVar(&o.Task, "task", "", "task id (default: the last part of the case image's name)")
	f.StringVar(&o.Runtime, "runtime", "", "runtime image (default $SSEBENCH_RUNTIME_IMAGE, else REGISTRY/runtime:VERSION)")
	f.StringVar(&o.Platform, "platform", "", "platform to assemble for (default: the case image's)")
	f.BoolVar(&o.Push, "push", false, "push the tool image to its registry too")
	f.BoolVar(&o.NoStore, "no-store", false, "with --push: do not keep the image in the local store (nothing is downloaded that the registry has)")
	return cmd
}

// taskFromCaseRef is the last path component of a case image's repository:
// case/<dataset>/<task> names the task (lowercased, as case names are).
func taskFromCaseRef(ref string) string {
	repo := ref
	if i := strings.IndexAny(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return path.Base(repo)
}

// sourceOf reads SOURCE_DIR from the config of task id under home.
func sourceOf(home, id string) (string, error) {
	ds := findDataset(home, id)
	if ds == "" {
		return "", fmt.Errorf("--source is required: task %q has no folder under %s to read its config from", id, filepath.Join(home, "datasets"))
	}
	t, err := task.Load(filepath.Join(home, "datasets", ds, id))
	if err != nil {
		return "", fmt.Errorf("reading task %s: %w", id, err)
	}
	return t.Config.Source, nil
}

// sourceDateEpoch reads SOURCE_DATE_EPOCH, the reproducible-builds way to
// fix a build's time.
func sourceDateEpoch() (time.Time, bool, error) {
	v := strings.TrimSpace(os.Getenv("SOURCE_DATE_EPOCH"))
	if v == "" {
		return time.Time{}, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds: unset it or set it to a Unix time", v)
	}
	return time.Unix(n, 0).UTC(), true, nil
}

// openFacts opens the layer facts cache: $SSEBENCH_CACHE/facts, else the
// user cache directory's ssebench/facts.
func openFacts() (*assemble.Facts, error) {
	dir := os.Getenv("SSEBENCH_CACHE")
	if dir == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("finding a cache directory: %w (set SSEBENCH_CACHE)", err)
		}
		dir = filepath.Join(c, "ssebench")
	}
	return assemble.NewFacts(filepath.Join(dir, "facts"))
}
