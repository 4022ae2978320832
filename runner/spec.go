package runner

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/containerd/containerd/v2/pkg/identifiers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/gateway"
)

// Network says what network a container gets.
type Network string

const (
	// NetworkRestricted gives the container a network namespace of its
	// own with only the loopback interface: nothing outside is reachable.
	// It is the default (the zero value means it too).
	NetworkRestricted Network = "restricted"
	// NetworkOpen shares the host's network namespace, /etc/resolv.conf
	// and /etc/hosts, so the container reaches what the host reaches (a
	// model API, for example).
	NetworkOpen Network = "open"
)

// ParseNetwork parses a --network value: "restricted" or "open"; empty
// means restricted.
func ParseNetwork(s string) (Network, error) {
	switch Network(s) {
	case "", NetworkRestricted:
		return NetworkRestricted, nil
	case NetworkOpen:
		return NetworkOpen, nil
	}
	return "", fmt.Errorf("unknown network %q: want %q or %q", s, NetworkRestricted, NetworkOpen)
}

// Mount is a bind mount of a host directory (or file) into the container.
type Mount struct {
	// Source is the host path; it must be absolute and exist.
	Source string
	// Target is the path in the container; it must be absolute. It is
	// created when the image lacks it.
	Target string
	// ReadOnly mounts Source read-only.
	ReadOnly bool
}

// RunSpec is one run's request; Run reads it whole and never changes it.
type RunSpec struct {
	// Image is the image reference, as the local store or the registry
	// names it. Required.
	Image string
	// Pull fetches Image from its registry instead of importing it from
	// the local store.
	Pull bool
	// ID is the container ID, unique in the runner's namespace. Empty
	// means a generated "ssebench-<12 hex digits>".
	ID string
	// Entrypoint, when non-nil, replaces the image's ENTRYPOINT; the
	// image's CMD is then dropped too, as with `docker run --entrypoint`.
	Entrypoint []string
	// Args, when non-empty, replaces the image's CMD; the ENTRYPOINT
	// stays, as with `docker run IMAGE ARGS...`.
	Args []string
	// Env holds KEY=VALUE entries that replace or extend the image's
	// environment.
	Env []string
	// Labels are the container's labels.
	Labels map[string]string
	// Mounts are bind mounts, applied in order.
	Mounts []Mount
	// Network is the container's network. The zero value means
	// NetworkRestricted.
	Network Network
	// Limits caps what the container may use (memory, swap included,
	// processes, CPU); a zero field means no limit of that kind.
	Limits contract.Limits
	// User is "uid", "uid:gid", "user" or "user:group"; empty means the
	// image's USER. Names are looked up in the image's /etc/passwd and
	// /etc/group.
	User string
	// Output receives the container's stdout and stderr, together, as
	// they are written; nil discards them. Run returns only after all output is delivered. The
	// container's stdin is /dev/null.
	Output io.Writer
	// Started, when set, is called once the task has started, with the
	// pid (on the host) of its first process; a sidecar run starts the
	// agent container from there.
	Started func(pid uint32)
	// Keep leaves the container and its snapshot in containerd after the
	// run (the exited task is always deleted), for inspection with
	// `ctr -n NAMESPACE containers info ID`.
	Keep bool
	// RemoveImage removes Image from containerd once the run is over,
	// when this process put it there (it was not in containerd when the
	// first of the process's runs that use it began) and no other run of
	// the process still uses it: containerd's garbage collector then frees
	// its content and unpacked layers. Without it the image stays (see
	// ImageBudget). The local store and the registry are untouched.
	RemoveImage bool
	// ImageBudget, when RemoveImage is false, bounds what the images
	// ssebench imported may take in the namespace (their content and
	// unpacked layers, see Runner.ImageUsage): a run that added to them
	// removes, once it is over, the least recently used of those no
	// container and no run of the process uses, until they fit (see
	// Runner.Evict). Zero means no bound: the image stays, labelled
	// LabelKept, which neither a budget nor a plain prune removes.
	ImageBudget int64
	// ImageNeeded, when set, is asked at that moment: true keeps the
	// image, unlabelled, for a later run of the same invocation, whose end
	// removes it.
	ImageNeeded func() bool
	// ImageLabels are labels the image record gets when this run creates
	// it, beside LabelImported: an evaluation's ssebench.eval, so that
	// resuming a killed evaluation finds the images it left.
	ImageLabels map[string]string
	// Gateway is a restricted run's model gateway for a backend to start
	// beside the container, where the container cannot reach one on this
	// machine (the Kubernetes backend). This runner refuses it: its
	// containers reach the host's gateway through a socket mount.
	Gateway *Gateway
}

// Gateway is a model gateway that a backend runs next to the run's
// container (cmd/ssebench-gateway), and what comes back from it.
type Gateway struct {
	// Image is the gateway's image, in a registry, pinned by digest.
	Image string
	// Config is the gateway's set-up (gateway.MarshalRemote), the real
	// key among it: it goes only where the gateway alone reads it.
	Config []byte
	// Records receives each request's record, one JSON line each
	// (model.jsonl), as the gateway reports them.
	Records io.Writer
	// Report is filled in by Run: how many records came back, and the
	// gateway's last totals.
	Report gateway.Report
}

// validate checks what can be checked without containerd and returns a
// copy with the defaults filled in.
func (s RunSpec) validate() (RunSpec, error) {
	if strings.TrimSpace(s.Image) == "" {
		return s, errors.New("no image to run")
	}
	if s.Gateway != nil {
		return s, errors.New("the containerd backend starts no gateway beside a container: mount the host's gateway socket instead")
	}
	if s.ID == "" {
		id, err := newID()
		if err != nil {
			return s, err
		}
		s.ID = id
	} else if err := identifiers.Validate(s.ID); err != nil {
		return s, fmt.Errorf("invalid container ID %q: use at most 76 letters, digits and single '.', '_' or '-' between them", s.ID)
	}
	if s.Entrypoint != nil && len(s.Entrypoint)+len(s.Args) == 0 {
		return s, errors.New("empty command: the entrypoint is replaced by nothing and there are no arguments")
	}
	n, err := ParseNetwork(string(s.Network))
	if err != nil {
		return s, err
	}
	s.Network = n
	for _, e := range s.Env {
		k, _, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return s, fmt.Errorf("invalid environment entry %q: want KEY=VALUE", e)
		}
	}
	for k := range s.Labels {
		if k == "" {
			return s, errors.New("invalid label: empty key")
		}
	}
	targets := map[string]bool{}
	for _, m := range s.Mounts {
		if !filepath.IsAbs(m.Source) {
			return s, fmt.Errorf("invalid mount %s:%s: the host path must be absolute", m.Source, m.Target)
		}
		if _, err := os.Stat(m.Source); err != nil {
			return s, fmt.Errorf("invalid mount %s:%s: %w", m.Source, m.Target, err)
		}
		if !path.IsAbs(m.Target) || path.Clean(m.Target) == "/" {
			return s, fmt.Errorf("invalid mount %s:%s: the container path must be absolute and not /", m.Source, m.Target)
		}
		t := path.Clean(m.Target)
		if targets[t] {
			return s, fmt.Errorf("invalid mounts: two mounts on %s", t)
		}
		targets[t] = true
	}
	return s, nil
}

// idRandomBytes gives generated container IDs 48 random bits: collisions
// between runs in one namespace are negligible.
const idRandomBytes = 6

func newID() (string, error) {
	b := make([]byte, idRandomBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a container ID: %w", err)
	}
	return "ssebench-" + hex.EncodeToString(b), nil
}

// specOpts returns the OCI spec options of a validated spec. image is the
// image whose config supplies the defaults; nil leaves it out (for tests
// that have no containerd). The order matters: the image's config first,
// then what the run overrides.
func (s RunSpec) specOpts(image oci.Image) []oci.SpecOpts {
	var opts []oci.SpecOpts
	if image != nil {
		opts = append(opts, oci.WithImageConfigArgs(image, s.Args))
	} else if len(s.Args) > 0 {
		opts = append(opts, oci.WithProcessArgs(s.Args...))
	}
	if s.Entrypoint != nil {
		args := append(append([]string(nil), s.Entrypoint...), s.Args...)
		opts = append(opts, oci.WithProcessArgs(args...))
	}
	if s.User != "" {
		opts = append(opts, oci.WithUser(s.User))
	}
	if len(s.Env) > 0 {
		opts = append(opts, oci.WithEnv(s.Env))
	}
	if len(s.Mounts) > 0 {
		opts = append(opts, oci.WithMounts(bindMounts(s.Mounts)))
	}
	opts = append(opts, limitOpts(s.Limits)...)
	switch s.Network {
	case NetworkOpen:
		opts = append(opts,
			oci.WithHostNamespace(specs.NetworkNamespace),
			oci.WithHostHostsFile,
			oci.WithHostResolvconf,
		)
	default:
		// containerd's default spec already has a new network namespace;
		// saying so keeps restricted runs restricted should that default
		// ever change.
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace}))
		if !s.mountsAt(hostsPath) {
			opts = append(opts, withLoopbackHosts)
		}
	}
	// Last: the profile follows the capabilities, the binds' options
	// every bind, containerd's included.
	return append(opts, withSeccomp, withHardenedBinds)
}

// mountsAt reports whether s mounts something at target.
func (s RunSpec) mountsAt(target string) bool {
	for _, m := range s.Mounts {
		if path.Clean(m.Target) == target {
			return true
		}
	}
	return false
}

// cpuPeriod is the CFS period CPU limits are expressed in (100 ms, the
// kernel's default).
const cpuPeriod = 100000

// limitOpts turns l into the container's cgroup settings. Swap is capped
// at the memory limit, so that a run which hits it is killed rather than
// swapping the machine to a halt.
func limitOpts(l contract.Limits) []oci.SpecOpts {
	var opts []oci.SpecOpts
	if l.MemoryBytes > 0 {
		opts = append(opts, oci.WithMemoryLimit(uint64(l.MemoryBytes)), oci.WithMemorySwap(l.MemoryBytes))
	}
	if l.Pids > 0 {
		opts = append(opts, oci.WithPidsLimit(l.Pids))
	}
	if l.CPUs > 0 {
		opts = append(opts, oci.WithCPUCFS(int64(l.CPUs*cpuPeriod), cpuPeriod))
	}
	return opts
}

func bindMounts(ms []Mount) []specs.Mount {
	out := make([]specs.Mount, 0, len(ms))
	for _, m := range ms {
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		out = append(out, specs.Mount{
			Type:        "bind",
			Source:      m.Source,
			Destination: path.Clean(m.Target),
			// rbind carries mounts below Source along; private keeps
			// the container's mount events out of the host.
			Options: []string{"rbind", "rprivate", mode},
		})
	}
	return out
}

// PairSpec is a run of two containers (SPEC.md section 17.1) for a backend
// that runs them as one unit, where no host stands between them (a
// Kubernetes pod): the task container (the tool image, which grades) and
// the agent container (the agent image, which holds no answer). They
// share SourceDir, which the task's image seeds, and /run/ssebench, of
// which the agent container sees only the agent socket's directory; each
// gets the mounts of its own spec. Only the task container's output is
// the run's (Task.Output).
type PairSpec struct {
	Task, Agent RunSpec
	// SourceDir is the task's SOURCE_DIR, the same path in both.
	SourceDir string
}
