package commands

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// What a run makes and what it needs made: a run builds the case image
// (from its base), assembles the tool image (from the case image and the
// runtime) and the agent image; it never makes a base image or the
// runtime. A user moving to a registry prefix met the missing ones one
// run at a time, first the base (with a hint that named neither
// --registry nor --os-image), then the runtime, which `tasks check` did
// not list.

// Kinds of imageCheck that a run does not make.
const (
	kindBase    = "base"
	kindRuntime = "runtime"
)

// runtimeRef is the runtime image a tool image is assembled on:
// --runtime, else SSEBENCH_RUNTIME_IMAGE, else REGISTRY/runtime:VERSION.
func runtimeRef(g *options.Global, names naming.Names, flag string) string {
	return firstSet(flag, g.Lookup("SSEBENCH_RUNTIME_IMAGE"), names.Runtime())
}

// settle decides, for located checks (base, case, tool, agent per task,
// and the runtime), which images must be made first for the platform
// want ("" for any platform): a base image is
// needed only where its case image is missing, the runtime only where a
// tool image is. A needed image that is missing gets the command that
// makes it (Fix); one that is not needed is not to be built.
func settle(checks []imageCheck, want string, fixes fixer) {
	missing := func(c imageCheck) bool {
		return c.Where == "missing" || (want != "" && len(c.Platforms) > 0 && !contains(c.Platforms, want))
	}
	caseMissing := map[string]bool{}
	toolMissing := false
	for _, c := range checks {
		switch c.Kind {
		case "case":
			caseMissing[c.Task] = missing(c)
		case "tool":
			toolMissing = toolMissing || missing(c)
		}
	}
	for i := range checks {
		c := &checks[i]
		c.Build = missing(*c)
		switch c.Kind {
		case kindBase:
			c.Build = c.Build && caseMissing[c.Task]
		case kindRuntime:
			c.Build = c.Build && toolMissing
		default:
			continue
		}
		if c.Build {
			c.Fix = fixes.fix(*c, want)
		}
	}
}

// osImagePlaceholder stands for the OS image in a base-images command
// when SSEBENCH_OS_IMAGE does not say it (osImageNote explains it).
const (
	osImagePlaceholder = "OS_IMAGE"
	osImageNote        = "OS_IMAGE is the image the base images start from, e.g. debian:bookworm or one made with mmdebstrap (set SSEBENCH_OS_IMAGE to have it here)"
)

// fixer writes the command that puts a base image or the runtime where a
// run finds it.
type fixer struct {
	// registry is --registry as given ("" when REGISTRY came from the
	// environment, which the command then inherits).
	registry string
	// osImage is the OS image the base images start from ("" unknown).
	osImage string
	// store is the local store, where the same image may be under
	// another prefix: then a copy puts it there.
	store *store.Store
	// prefix is REGISTRY.
	prefix string
}

func (f fixer) fix(c imageCheck, platform string) string {
	if src := f.elsewhere(c.Ref); src != "" {
		return fmt.Sprintf("ssebench copy %s %s", src, c.Ref)
	}
	reg := ""
	if f.registry != "" {
		reg = " --registry " + f.registry
	}
	switch c.Kind {
	case kindBase:
		os := f.osImage
		if os == "" {
			os = osImagePlaceholder
		}
		return fmt.Sprintf("ssebench base-images %s%s --os-image %s", baseName(f.prefix, c.Ref), reg, os)
	case kindRuntime:
		p := ""
		if platform != "" && platform != "linux/"+runtime.GOARCH {
			p = " --platform " + platform
		}
		return "ssebench runtime build" + p + reg
	}
	return ""
}

// elsewhere is a store entry with ref's repository path and tag under
// another prefix, "" when there is none.
func (f fixer) elsewhere(ref string) string {
	if f.store == nil || !strings.HasPrefix(ref, f.prefix+"/") {
		return ""
	}
	tail := strings.TrimPrefix(ref, f.prefix)
	es, err := f.store.List()
	if err != nil {
		return ""
	}
	for _, e := range es {
		if e.Name != ref && strings.HasSuffix(e.Name, tail) {
			return e.Name
		}
	}
	return ""
}

// baseName is the NAME `ssebench base-images` takes for a base image
// reference: "go" for REGISTRY/base-generic-go:TAG.
func baseName(prefix, ref string) string {
	r := strings.TrimPrefix(strings.TrimPrefix(ref, prefix), "/")
	r, _, _ = strings.Cut(r, ":")
	return strings.TrimPrefix(r, "base-generic-")
}

// fixLines are the distinct commands of checks, a base-images command per
// OS image naming every base it makes.
func fixLines(checks []imageCheck) []string {
	seen := map[string]bool{}
	var bases []string
	var out []string
	for _, c := range checks {
		if c.Fix == "" || seen[c.Fix] {
			continue
		}
		seen[c.Fix] = true
		if c.Kind == kindBase && strings.HasPrefix(c.Fix, "ssebench base-images ") {
			bases = append(bases, c.Fix)
			continue
		}
		out = append(out, c.Fix)
	}
	// "ssebench base-images go REST" and "... c REST": one command.
	byRest := map[string][]string{}
	var rests []string
	for _, b := range bases {
		f := strings.Fields(strings.TrimPrefix(b, "ssebench base-images "))
		rest := strings.Join(f[1:], " ")
		if _, ok := byRest[rest]; !ok {
			rests = append(rests, rest)
		}
		byRest[rest] = append(byRest[rest], f[0])
	}
	var merged []string
	for _, r := range rests {
		langs := byRest[r]
		sort.Strings(langs)
		merged = append(merged, "ssebench base-images "+strings.Join(langs, " ")+" "+r)
	}
	return append(merged, out...)
}

// runNeeds locates the images a run of tasks (ids, or dataset folders)
// with agents needs and settles what must be made first, for the
// platform want ("" any); the runtime is rt. only, when not empty, keeps
// the tasks it names.
func runNeeds(ctx context.Context, g *options.Global, names naming.Names, home string, args, only, agents []string, rt, want string, s *store.Store, ropts []remote.Option) ([]imageCheck, error) {
	all, err := checkPlan(home, names, args, agents)
	if err != nil {
		return nil, err
	}
	var checks []imageCheck
	for _, c := range all {
		if len(only) == 0 || contains(only, c.Task) {
			checks = append(checks, c)
		}
	}
	checks = append(checks, imageCheck{Kind: kindRuntime, Ref: rt})
	askRegistry := strings.TrimSpace(g.Registry) != "" || strings.TrimSpace(g.Lookup(naming.RegistryEnv)) != ""
	if g.Pull == string(remote.PullNever) {
		askRegistry = false
	}
	for i := range checks {
		if err := locate(ctx, s, ropts, askRegistry, &checks[i]); err != nil {
			return nil, err
		}
	}
	settle(checks, want, fixer{registry: strings.TrimSpace(g.Registry), osImage: g.Lookup(OSImageEnv), store: s, prefix: names.Registry})
	return checks, nil
}

// missingNeeds is the error of runs (who: "the run", "the evaluation's
// runs") that need images no run makes and that are missing, all of them
// in one line with the commands that make them; nil when there are none.
func missingNeeds(who string, checks []imageCheck) error {
	var refs []string
	for _, c := range checks {
		if c.Fix != "" {
			what := "a base image"
			if c.Kind == kindRuntime {
				what = "the runtime"
			}
			refs = append(refs, c.Ref+" ("+what+")")
		}
	}
	if len(refs) == 0 {
		return nil
	}
	list := refs[0]
	if n := len(refs); n > 1 {
		list = strings.Join(refs[:n-1], ", ") + " and " + refs[n-1]
	}
	which, them := "which no run makes and which is missing", "it"
	if len(refs) > 1 {
		which, them = "which no run makes and which are missing", "them"
	}
	fixes := fixLines(checks)
	msg := fmt.Sprintf("%s needs %s, %s from the store and the registry: make %s first with `%s`",
		who, list, which, them, strings.Join(fixes, "` and `"))
	if strings.Contains(strings.Join(fixes, " "), osImagePlaceholder) {
		msg += "; " + osImageNote
	}
	return errors.New(msg)
}

// checkRunNeeds fails a run (or every run of an evaluation) of tasks
// (of the dataset folder local, else of the home's datasets) whose base
// images or runtime are missing, before anything is built, naming them
// all at once. It looks only where a run would (the store, then REGISTRY
// when one is set and --pull allows), reading manifests and configs, and
// takes an image of any platform as there (the run's platform is the
// task's, which the pipeline picks).
func checkRunNeeds(ctx context.Context, g *options.Global, e *pipeline.Env, who, local string, tasks, agents []string, rtFlag string) error {
	args := tasks
	if local != "" {
		args = []string{local}
	}
	checks, err := runNeeds(ctx, g, e.Names, e.Home, args, tasks, agents, runtimeRef(g, e.Names, rtFlag), "", e.Store, e.RegistryOptions)
	if err != nil {
		return err
	}
	return missingNeeds(who, checks)
}

// preflightRuns says whether checkRunNeeds knows what the runs need: a
// sandbox run of the default tool layer that builds its case image from a
// task folder. Prebuilt runs, catalogs' case images and other tool layers
// are checked where they are read.
func preflightRuns(prebuilt bool, mode, toolLayer, catalog string, build bool) bool {
	return !prebuilt && (mode == "" || mode == pipeline.ModeSandbox) &&
		(toolLayer == "" || toolLayer == pipeline.DefaultToolLayer) && (catalog == "" || build)
}
