package preflight

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// settle decides, for located checks (base, case, tool, agent per task,
// and the runtime), which images must be made first for the platform
// want ("" for any platform): a base image is
// needed only where its case image is missing, the runtime only where a
// tool image is. A needed image that is missing gets the command that
// makes it (Fix); one that is not needed is not to be built.
func settle(checks []Image, want string, fixes fixer) {
	missing := func(c Image) bool {
		return c.Where == WhereMissing || (want != "" && len(c.Platforms) > 0 && !slices.Contains(c.Platforms, want))
	}
	caseMissing := map[string]bool{}
	toolMissing := false
	for _, c := range checks {
		switch c.Kind {
		case KindCase:
			caseMissing[c.Task] = missing(c)
		case KindTool:
			toolMissing = toolMissing || missing(c)
		}
	}
	for i := range checks {
		c := &checks[i]
		c.Build = missing(*c)
		switch c.Kind {
		case KindBase:
			c.Build = c.Build && caseMissing[c.Task]
		case KindRuntime:
			c.Build = c.Build && toolMissing
		default:
			continue
		}
		if c.Build {
			c.Fix = fixes.fix(*c, want)
		}
	}
}

// OSImagePlaceholder stands for the OS image in a base-images command
// when SSEBENCH_OS_IMAGE does not say it (OSImageNote explains it, for a
// line printed after the commands).
const (
	OSImagePlaceholder = "OS_IMAGE"
	OSImageNote        = "OS_IMAGE is the image the base images start from, e.g. debian:bookworm or one made with mmdebstrap (set SSEBENCH_OS_IMAGE to have it here)"
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

func (f fixer) fix(c Image, platform string) string {
	if src := f.elsewhere(c.Ref); src != "" {
		return fmt.Sprintf("ssebench copy %s %s", src, c.Ref)
	}
	reg := ""
	if f.registry != "" {
		reg = " --registry " + f.registry
	}
	switch c.Kind {
	case KindBase:
		os := f.osImage
		if os == "" {
			os = OSImagePlaceholder
		}
		return fmt.Sprintf("ssebench base-images %s%s --os-image %s", baseName(f.prefix, c.Ref), reg, os)
	case KindRuntime:
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

// Fixes are the distinct commands of checks, a base-images command per
// OS image naming every base it makes.
func Fixes(checks []Image) []string {
	seen := map[string]bool{}
	var bases []string
	var out []string
	for _, c := range checks {
		if c.Fix == "" || seen[c.Fix] {
			continue
		}
		seen[c.Fix] = true
		if c.Kind == KindBase && strings.HasPrefix(c.Fix, "ssebench base-images ") {
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

// Missing is the error of runs (who: "the run", "the evaluation's
// runs") that need images no run makes and that are missing, all of them
// in one line with the commands that make them; nil when there are none.
func Missing(who string, checks []Image) error {
	var refs []string
	for _, c := range checks {
		if c.Fix != "" {
			what := "a base image"
			if c.Kind == KindRuntime {
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
	fixes := Fixes(checks)
	msg := fmt.Sprintf("%s needs %s, %s from the store and the registry: make %s first with `%s`",
		who, list, which, them, strings.Join(fixes, "` and `"))
	if strings.Contains(strings.Join(fixes, " "), OSImagePlaceholder) {
		msg += "; " + OSImageNote
	}
	return errors.New(msg)
}
