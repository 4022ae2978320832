package kube

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultDeadlineMargin is what a Job gets beyond the agent's TIMEOUT
// (activeDeadlineSeconds): pulling the image, then grading, which builds
// the project and runs its tests after the agent's time is up.
const DefaultDeadlineMargin = 30 * time.Minute

// DefaultTTL is how long the cluster keeps a finished Job that Run could
// not delete (ssebench was killed): ttlSecondsAfterFinished, a safety net
// behind the cleanup of every run and of `eval --resume`.
const DefaultTTL = time.Hour

// defaultTimeout is TIMEOUT when a run's environment lacks it (SPEC.md
// section 10).
const defaultTimeout = time.Hour

// cleanupTimeout bounds the deletion of a run's objects, which outlives
// the run's context.
const cleanupTimeout = 2 * time.Minute

// Option configures a Runner.
type Option func(*options) error

type options struct {
	kubeconfig     string
	context        string
	namespace      string
	platform       string
	deadlineMargin time.Duration
	ttl            time.Duration
	pollInterval   time.Duration
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{
		platform:       "linux/amd64",
		deadlineMargin: DefaultDeadlineMargin,
		ttl:            DefaultTTL,
		pollInterval:   500 * time.Millisecond,
	}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// WithKubeconfig sets the kubeconfig file. The default is what kubectl
// reads: $KUBECONFIG, else ~/.kube/config, else the in-cluster
// configuration of a pod.
func WithKubeconfig(path string) Option {
	return func(o *options) error {
		o.kubeconfig = strings.TrimSpace(path)
		return nil
	}
}

// WithContext sets the kubeconfig context (--kube-context). The default
// is the kubeconfig's current context.
func WithContext(name string) Option {
	return func(o *options) error {
		o.context = strings.TrimSpace(name)
		return nil
	}
}

// WithNamespace sets the namespace of the runs' objects (--namespace).
// The default is the context's namespace, else "default".
func WithNamespace(ns string) Option {
	return func(o *options) error {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			return nil
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("--namespace %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
		o.namespace = ns
		return nil
	}
}

// WithPlatform sets the platform ("linux/amd64") whose nodes run the
// pods. The default value is linux/amd64.
func WithPlatform(platform string) Option {
	return func(o *options) error {
		os, arch, ok := strings.Cut(platform, "/")
		if !ok || os != "linux" || arch == "" {
			return fmt.Errorf("invalid platform %q: want linux/<arch>", platform)
		}
		o.platform = platform
		return nil
	}
}

// WithDeadlineMargin sets what a Job gets beyond the run's TIMEOUT. The
// default value is DefaultDeadlineMargin (30 minutes).
func WithDeadlineMargin(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return errors.New("the deadline margin must be positive")
		}
		o.deadlineMargin = d
		return nil
	}
}
