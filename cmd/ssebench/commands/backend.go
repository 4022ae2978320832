package commands

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/runner/kube"
)

// backendOptions are the flags that choose where runs run.
type backendOptions struct {
	Backend, Kubeconfig, KubeContext, Namespace string
}

func addBackendFlags(cmd *cobra.Command, o *backendOptions) {
	f := cmd.Flags()
	f.StringVar(&o.Backend, "backend", "", "where runs run: containerd (this machine) or kubernetes (a Job per run) (default $"+pipeline.BackendEnv+", else containerd)")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the kubernetes backend (default $KUBECONFIG, else ~/.kube/config, else in-cluster)")
	f.StringVar(&o.KubeContext, "kube-context", "", "kubeconfig context of the kubernetes backend (default the current context)")
	f.StringVar(&o.Namespace, "namespace", "", "namespace of the kubernetes backend's Jobs (default the context's, else default)")
}

// cluster returns the Kubernetes backend that the flags ask for, or nil
// for containerd. Kubernetes pulls from a registry, so it needs --registry
// (the images are pushed first) or --prebuilt.
func (o *backendOptions) cluster(ctx context.Context, g *options.Global, cmd *cobra.Command, prebuilt bool) (*kubeCluster, error) {
	name := o.Backend
	if !cmd.Flag("backend").Changed {
		name = strings.TrimSpace(g.Lookup(pipeline.BackendEnv))
	}
	backend, err := pipeline.ParseBackend(name)
	if err != nil {
		return nil, fmt.Errorf("--backend: %w", err)
	}
	if backend != pipeline.BackendKubernetes {
		for _, f := range []string{"kubeconfig", "kube-context", "namespace"} {
			if cmd.Flag(f).Changed {
				return nil, fmt.Errorf("--%s is for --backend kubernetes", f)
			}
		}
		return nil, nil
	}
	if !prebuilt && !cmd.Flag("registry").Changed {
		return nil, fmt.Errorf("--backend kubernetes runs images from a registry the cluster reaches: pass --registry (e.g. --registry localhost:5000/ssebench) to push them there, or --prebuilt")
	}
	r, err := kube.New(ctx, kube.WithKubeconfig(o.Kubeconfig), kube.WithContext(o.KubeContext), kube.WithNamespace(o.Namespace))
	if err != nil {
		return nil, err
	}
	return &kubeCluster{r: r}, nil
}

// kubeCluster is the Kubernetes backend of a run (pipeline.Cluster).
type kubeCluster struct{ r *kube.Runner }

var _ pipeline.Cluster = (*kubeCluster)(nil)

// Open implements pipeline.Cluster.
func (k *kubeCluster) Open(_ context.Context, platform string) (pipeline.Executor, error) {
	return k.r.ForPlatform(platform)
}

// DeleteLabeled implements evaluate.ClusterRunner.
func (k *kubeCluster) DeleteLabeled(ctx context.Context, selector string) error {
	return k.r.DeleteLabeled(ctx, selector)
}
