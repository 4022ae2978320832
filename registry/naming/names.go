package naming

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Names computes the image names of SPEC.md section 1 for one REGISTRY
// prefix and one VERSION. The lowercasing differs per layer on purpose: it
// reproduces what the Python pipeline did, so images it published keep their
// names.
type Names struct {
	// Registry is the prefix, without a trailing slash.
	Registry string
	// Version is the SSEBench version: the tag of tool, runtime and sidecar
	// images and the default agent tag.
	Version string
}

// NewNames returns Names for registry (trailing slashes removed) and version.
func NewNames(registry, version string) Names {
	return Names{Registry: strings.TrimRight(registry, "/"), Version: version}
}

// Base is REGISTRY/base-generic-<lang>:<VERSION>.
func (n Names) Base(lang string) string {
	return fmt.Sprintf("%s/base-generic-%s:%s", n.Registry, lang, n.Version)
}

// BaseLatest is REGISTRY/base-generic-<lang>:latest.
func (n Names) BaseLatest(lang string) string {
	return fmt.Sprintf("%s/base-generic-%s:latest", n.Registry, lang)
}

// Prefixed is REGISTRY/<ref>, for a reference written without the registry
// (the `base` field of a manifest, e.g. base-generic-go:1.0.0).
func (n Names) Prefixed(ref string) string {
	return n.Registry + "/" + strings.TrimLeft(ref, "/")
}

// Case is REGISTRY/ + lowercase(case/<dataset>/<task>), untagged. A catalog
// case image adds ":<dataset version>" (see CaseTagged).
func (n Names) Case(dataset, task string) string {
	return n.Registry + "/" + CaseRepo(dataset, task)
}

// CaseRepo is lowercase(case/<dataset>/<task>): the `image` field of a
// manifest entry.
func CaseRepo(dataset, task string) string {
	return strings.ToLower("case/" + dataset + "/" + task)
}

// CaseTagged is the case image of a catalog: Case(dataset, task) tagged with
// the dataset version.
func (n Names) CaseTagged(dataset, task, datasetVersion string) string {
	return n.Case(dataset, task) + ":" + datasetVersion
}

// Tool is REGISTRY/tool/ + lowercase(task) + :VERSION. Only the task is
// lowercased: the registry is left as written.
func (n Names) Tool(task string) string {
	return fmt.Sprintf("%s/tool/%s:%s", n.Registry, strings.ToLower(task), n.Version)
}

// ToolLayer is the tool image of a custom tool layer kind:
// REGISTRY/<kind>/lowercase(task):VERSION.
func (n Names) ToolLayer(kind, task string) string {
	return fmt.Sprintf("%s/%s/%s:%s", n.Registry, kind, strings.ToLower(task), n.Version)
}

// Agent is lowercase(REGISTRY/agent-<agent>/<task>:<version>), the whole
// string lowercased, registry included. An empty version means VERSION.
func (n Names) Agent(agent, task, version string) string {
	if version == "" {
		version = n.Version
	}
	return strings.ToLower(fmt.Sprintf("%s/agent-%s/%s:%s", n.Registry, agent, task, version))
}

// Runtime is REGISTRY/runtime:VERSION.
func (n Names) Runtime() string {
	return fmt.Sprintf("%s/runtime:%s", n.Registry, n.Version)
}

// Gateway is REGISTRY/gateway:VERSION: the model gateway that a restricted
// run on a cluster gets in a pod of its own.
func (n Names) Gateway() string {
	return fmt.Sprintf("%s/gateway:%s", n.Registry, n.Version)
}

// SidecarTask is REGISTRY/tool-sidecar/ + lowercase(task) + :VERSION.
func (n Names) SidecarTask(task string) string {
	return fmt.Sprintf("%s/tool-sidecar/%s:%s", n.Registry, strings.ToLower(task), n.Version)
}

// SidecarAgentRuntime is REGISTRY/tool-sidecar-agent:VERSION.
func (n Names) SidecarAgentRuntime() string {
	return fmt.Sprintf("%s/tool-sidecar-agent:%s", n.Registry, n.Version)
}

// SidecarAgent is lowercase(REGISTRY/agent-<agent>/sidecar:<version>). An
// empty version means VERSION.
func (n Names) SidecarAgent(agent, version string) string {
	if version == "" {
		version = n.Version
	}
	return strings.ToLower(fmt.Sprintf("%s/agent-%s/sidecar:%s", n.Registry, agent, version))
}

// IsGrader reports whether ref names a runtime or tool image (sandbox or
// sidecar), whatever its prefix: the images that grade, on which
// everything built later stands, which a load replaces only when forced.
func IsGrader(ref string) bool {
	r, err := name.ParseReference(ref)
	if err != nil {
		return false
	}
	repo := "/" + r.Context().RepositoryStr()
	return strings.HasSuffix(repo, "/runtime") || strings.Contains(repo, "/tool/") ||
		strings.Contains(repo, "/tool-sidecar/") || strings.HasSuffix(repo, "/tool-sidecar-agent")
}
