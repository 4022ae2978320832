package kube

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ErrUnreachable means the cluster's API did not answer. Match it with
// errors.Is.
var ErrUnreachable = errors.New("the Kubernetes API is unreachable")

// Runner runs images as Jobs in one namespace of one cluster. It is safe
// for concurrent use as long as the runs' IDs differ. Close it when done.
type Runner struct {
	api  *client
	cfg  *rest.Config
	opts options
}

// New loads the cluster's configuration as kubectl does (see
// WithKubeconfig, WithContext), checks that its API answers and returns a
// Runner for the namespace of WithNamespace.
func New(ctx context.Context, opts ...Option) (*Runner, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.kubeconfig != "" {
		rules.ExplicitPath = o.kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the Kubernetes configuration: %w (pass --kube-context, or set KUBECONFIG)", err)
	}
	if o.namespace == "" {
		if o.namespace, _, err = cc.Namespace(); err != nil || o.namespace == "" {
			o.namespace = "default"
		}
	}
	cfg.UserAgent = "ssebench"
	api, err := newClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to Kubernetes at %s: %w", cfg.Host, err)
	}
	r := &Runner{api: api, cfg: cfg, opts: *o}
	if err := r.ping(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Runner) ping(ctx context.Context) error {
	if err := r.api.ready(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w at %s: %v (check --kube-context and KUBECONFIG)", ErrUnreachable, r.cfg.Host, err)
	}
	return nil
}

// Namespace returns the namespace the runs go to.
func (r *Runner) Namespace() string { return r.opts.namespace }

// ForPlatform returns a Runner of the same cluster whose pods run on
// nodes of platform ("linux/arm64"); it shares the connection.
func (r *Runner) ForPlatform(platform string) (*Runner, error) {
	o := r.opts
	if err := WithPlatform(platform)(&o); err != nil {
		return nil, err
	}
	return &Runner{api: r.api, cfg: r.cfg, opts: o}, nil
}

// Close releases the Runner. Its client holds no connection that
// needs closing; Close exists so that every backend is closed the same
// way.
func (r *Runner) Close() error { return nil }
