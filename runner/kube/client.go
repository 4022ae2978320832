package kube

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// client is the part of the Kubernetes API a Runner speaks: Jobs, pods
// (and their logs), Services, Secrets and NetworkPolicies. It stands in
// for client-go's clientset (k8s.io/client-go/kubernetes), whose scheme
// registers every API group in its package inits: linked into ssebench,
// those inits ran in every command, `ssebench --version` too, and the
// pages they touched stayed resident. The scheme here knows the three
// groups the runs use and is built by the first Runner.
type client struct {
	core, batch, networking *rest.RESTClient
	params                  runtime.ParameterCodec
}

// apiScheme is core/v1, batch/v1 and networking/v1 with the meta/v1
// options (list, get, create, delete) of each.
var apiScheme = sync.OnceValues(func() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, batchv1.AddToScheme, networkingv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
})

// newClient connects to the API server of cfg; the three groups' clients
// share one HTTP client.
func newClient(cfg *rest.Config) (*client, error) {
	s, err := apiScheme()
	if err != nil {
		return nil, fmt.Errorf("registering the Kubernetes API types: %w", err)
	}
	codecs := serializer.NewCodecFactory(s).WithoutConversion()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	shared := rest.CopyConfig(cfg)
	if shared.RateLimiter == nil && shared.QPS > 0 {
		// One rate for the three groups, as the clientset has when the
		// configuration sets one (without, each group has the default).
		if shared.Burst <= 0 {
			return nil, fmt.Errorf("the Kubernetes configuration sets a QPS of %g without a burst", shared.QPS)
		}
		shared.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(shared.QPS, shared.Burst)
	}
	group := func(apiPath string, gv schema.GroupVersion) (*rest.RESTClient, error) {
		c := rest.CopyConfig(shared)
		c.APIPath, c.GroupVersion, c.NegotiatedSerializer = apiPath, &gv, codecs
		return rest.RESTClientForConfigAndClient(c, hc)
	}
	c := &client{params: runtime.NewParameterCodec(s)}
	if c.core, err = group("/api", corev1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	if c.batch, err = group("/apis", batchv1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	if c.networking, err = group("/apis", networkingv1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	return c, nil
}

// ready asks the API server whether it serves (GET /readyz).
func (c *client) ready(ctx context.Context) error {
	return c.core.Get().AbsPath("/readyz").Do(ctx).Error()
}

func (c *client) jobs(ns string) objects { return objects{c.batch, c.params, ns, "jobs"} }
func (c *client) pods(ns string) objects { return objects{c.core, c.params, ns, "pods"} }
func (c *client) services(ns string) objects {
	return objects{c.core, c.params, ns, "services"}
}
func (c *client) secrets(ns string) objects { return objects{c.core, c.params, ns, "secrets"} }
func (c *client) networkPolicies(ns string) objects {
	return objects{c.networking, c.params, ns, "networkpolicies"}
}

// objects is one kind of object of one namespace. Its requests are the
// clientset's: protobuf where the server speaks it, the options as query
// parameters, and the API's errors as *errors.StatusError (match them
// with k8s.io/apimachinery/pkg/api/errors).
type objects struct {
	rc     *rest.RESTClient
	params runtime.ParameterCodec
	ns     string
	name   string
}

// create creates obj and decodes what the server made of it into into;
// into may be nil.
func (r objects) create(ctx context.Context, obj, into runtime.Object) error {
	res := r.rc.Post().UseProtobufAsDefault().Namespace(r.ns).Resource(r.name).
		VersionedParams(&metav1.CreateOptions{}, r.params).Body(obj).Do(ctx)
	if into == nil {
		return res.Error()
	}
	return res.Into(into)
}

// get reads the object called name into into.
func (r objects) get(ctx context.Context, name string, into runtime.Object) error {
	return r.rc.Get().UseProtobufAsDefault().Namespace(r.ns).Resource(r.name).Name(name).
		VersionedParams(&metav1.GetOptions{}, r.params).Do(ctx).Into(into)
}

// list reads the objects opts selects into into, a list.
func (r objects) list(ctx context.Context, opts metav1.ListOptions, into runtime.Object) error {
	return r.rc.Get().UseProtobufAsDefault().Namespace(r.ns).Resource(r.name).
		VersionedParams(&opts, r.params).Timeout(timeout(opts)).Do(ctx).Into(into)
}

// delete deletes the object called name.
func (r objects) delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.rc.Delete().UseProtobufAsDefault().Namespace(r.ns).Resource(r.name).Name(name).
		Body(&opts).Do(ctx).Error()
}

// deleteCollection deletes the objects list selects.
func (r objects) deleteCollection(ctx context.Context, opts metav1.DeleteOptions, list metav1.ListOptions) error {
	return r.rc.Delete().UseProtobufAsDefault().Namespace(r.ns).Resource(r.name).
		VersionedParams(&list, r.params).Timeout(timeout(list)).Body(&opts).Do(ctx).Error()
}

// logs opens the log of pod (of a pods objects); the caller closes it.
func (r objects) logs(ctx context.Context, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return r.rc.Get().Namespace(r.ns).Name(pod).Resource(r.name).SubResource("log").
		VersionedParams(opts, r.params).Stream(ctx)
}

func timeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}
