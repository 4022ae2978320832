package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// fakeAPI is an API server that knows one run: it takes the Job and the
// NetworkPolicy, shows the Job's pod running, streams its log (the
// results block for the Job's token), ends it with exit status 3 and
// forgets everything when the collections are deleted. It records the
// requests it got.
type fakeAPI struct {
	t       *testing.T
	ns      string
	results string // the folder the pod's results come from
	codecs  serializer.CodecFactory
	enc     runtime.Encoder

	mu       sync.Mutex
	requests []string
	job      *batchv1.Job
	policy   *networkingv1.NetworkPolicy
	deleted  *metav1.DeleteOptions
	ready    int // status of /readyz; 0 is 200
}

func newFakeAPI(t *testing.T, ns, results string) *fakeAPI {
	s, err := apiScheme()
	if err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(s)
	return &fakeAPI{t: t, ns: ns, results: results, codecs: codecs,
		enc: codecs.LegacyCodec(corev1.SchemeGroupVersion, batchv1.SchemeGroupVersion, networkingv1.SchemeGroupVersion)}
}

const fakePod = "ssebench-fake-pod"

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	line := req.Method + " " + req.URL.Path
	if q := req.URL.Query(); len(q) > 0 {
		line += "?" + q.Encode()
	}
	f.requests = append(f.requests, line)
	body, _ := io.ReadAll(req.Body)
	decode := func() runtime.Object {
		obj, _, err := f.codecs.UniversalDeserializer().Decode(body, nil, nil)
		if err != nil {
			f.t.Errorf("%s: decoding the body (%s): %v", line, req.Header.Get("Content-Type"), err)
		}
		return obj
	}
	reply := func(code int, obj runtime.Object) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if err := f.enc.Encode(obj, w); err != nil {
			f.t.Errorf("%s: encoding the reply: %v", line, err)
		}
	}
	api, batch, netv1 := "/api/v1/namespaces/"+f.ns, "/apis/batch/v1/namespaces/"+f.ns, "/apis/networking.k8s.io/v1/namespaces/"+f.ns
	running := f.job != nil && f.deleted == nil
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fakePod, Namespace: f.ns}}
	switch p := req.URL.Path; {
	case p == "/readyz":
		if f.ready != 0 {
			http.Error(w, "not ready", f.ready)
			return
		}
		io.WriteString(w, "ok")
	case req.Method == http.MethodPost && p == netv1+"/networkpolicies":
		f.policy, _ = decode().(*networkingv1.NetworkPolicy)
		reply(http.StatusCreated, f.policy)
	case req.Method == http.MethodPost && p == batch+"/jobs":
		f.job, _ = decode().(*batchv1.Job)
		reply(http.StatusCreated, f.job)
	case req.Method == http.MethodGet && f.job != nil && p == batch+"/jobs/"+f.job.Name:
		reply(http.StatusOK, f.job)
	case req.Method == http.MethodGet && p == api+"/pods":
		list := &corev1.PodList{}
		if running {
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: containerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			list.Items = append(list.Items, *pod)
		}
		reply(http.StatusOK, list)
	case req.Method == http.MethodGet && running && p == api+"/pods/"+fakePod+"/log":
		io.WriteString(w, "the agent's output\n")
		var token string
		for _, e := range f.job.Spec.Template.Spec.Containers[0].Env {
			if e.Name == contract.EnvResultsStream {
				token = e.Value
			}
		}
		if err := contract.WriteResultsStream(w, token, map[string]string{contract.StreamResults: f.results}); err != nil {
			f.t.Error(err)
		}
	case req.Method == http.MethodGet && running && p == api+"/pods/"+fakePod:
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: containerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}}}
		reply(http.StatusOK, pod)
	case req.Method == http.MethodGet && p == api+"/services":
		reply(http.StatusOK, &corev1.ServiceList{})
	case req.Method == http.MethodDelete && slices.Contains([]string{batch + "/jobs", api + "/pods", netv1 + "/networkpolicies", api + "/secrets"}, p):
		if p == batch+"/jobs" {
			f.deleted, _ = decode().(*metav1.DeleteOptions)
		}
		reply(http.StatusOK, &metav1.Status{Status: metav1.StatusSuccess})
	default:
		reply(http.StatusNotFound, &metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound, Message: line + " not found"})
	}
}

// fakeKubeconfig writes a kubeconfig whose context is the server at url.
func fakeKubeconfig(t *testing.T, url string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: %q}}]
users: [{name: fake, user: {token: fake}}]
contexts: [{name: fake, context: {cluster: fake, user: fake, namespace: from-context}}]
current-context: fake
`, url)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunOnFakeAPI runs a restricted run against a fake API server: the
// Runner's own client (not client-go's clientset) creates the
// NetworkPolicy and the Job, reads the pod's output and its results back
// into the run's folder, returns the container's exit status, and
// deletes what the run created by its label.
func TestRunOnFakeAPI(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "result.json"), []byte(`{"status":"done"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFakeAPI(t, "runs", src)
	srv := httptest.NewServer(f)
	defer srv.Close()

	r, err := New(context.Background(), WithKubeconfig(fakeKubeconfig(t, srv.URL)), WithNamespace("runs"))
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	r.opts.pollInterval = 0
	spec := testSpec(t)
	var out bytes.Buffer
	spec.Output = &out
	res, err := r.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run = %v; requests:\n%s", err, strings.Join(f.requests, "\n"))
	}
	if res.ExitCode != 3 || res.Stopped || res.ContainerID != jobName(spec.ID) {
		t.Errorf("Run = %+v, want exit status 3 of %s", res, jobName(spec.ID))
	}
	if !strings.Contains(out.String(), "the agent's output") {
		t.Errorf("the run's output = %q, want the pod's log", out.String())
	}
	got, err := os.ReadFile(filepath.Join(spec.Mounts[0].Source, "result.json"))
	if err != nil || string(got) != `{"status":"done"}` {
		t.Errorf("the run's results folder has result.json %q (%v), want the pod's", got, err)
	}

	// What the server was asked, in the clientset's shapes.
	name := jobName(spec.ID)
	sel := "labelSelector=" + strings.NewReplacer("=", "%3D", ",", "%2C", "/", "%2F").Replace(RunLabel+"="+name+","+ManagedLabel+"="+managedBy)
	for _, want := range []string{
		"GET /readyz",
		"POST /apis/networking.k8s.io/v1/namespaces/runs/networkpolicies",
		"POST /apis/batch/v1/namespaces/runs/jobs",
		"GET /apis/batch/v1/namespaces/runs/jobs/" + name,
		"GET /api/v1/namespaces/runs/pods?labelSelector=ssebench.job%3D" + name,
		"GET /api/v1/namespaces/runs/pods/" + fakePod + "/log?container=run&follow=true",
		"GET /api/v1/namespaces/runs/pods/" + fakePod,
		"DELETE /apis/batch/v1/namespaces/runs/jobs?" + sel,
		"DELETE /api/v1/namespaces/runs/pods?" + sel,
		"DELETE /apis/networking.k8s.io/v1/namespaces/runs/networkpolicies?" + sel,
		"GET /api/v1/namespaces/runs/services?" + sel,
		"DELETE /api/v1/namespaces/runs/secrets?" + sel,
		"GET /api/v1/namespaces/runs/pods?" + sel,
	} {
		if !slices.Contains(f.requests, want) {
			t.Errorf("the server got no %s; it got:\n%s", want, strings.Join(f.requests, "\n"))
		}
	}
	if f.policy == nil || f.policy.Name != name || len(f.policy.Spec.PolicyTypes) != 2 {
		t.Errorf("the server got the NetworkPolicy %+v, want the run's deny-all", f.policy)
	}
	if f.job == nil || f.job.Name != name || f.job.Spec.Template.Spec.Containers[0].Image != testImage {
		t.Errorf("the server got the Job %+v, want the run's", f.job)
	}
	if f.deleted == nil || f.deleted.PropagationPolicy == nil || *f.deleted.PropagationPolicy != metav1.DeletePropagationBackground {
		t.Errorf("the Jobs were deleted with %+v, want background propagation", f.deleted)
	}
}

// TestNewUnreachable: an API server that does not answer ready is
// ErrUnreachable, said in one line with what to check.
func TestNewUnreachable(t *testing.T) {
	f := newFakeAPI(t, "runs", t.TempDir())
	f.ready = http.StatusServiceUnavailable
	srv := httptest.NewServer(f)
	defer srv.Close()
	_, err := New(context.Background(), WithKubeconfig(fakeKubeconfig(t, srv.URL)))
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "--kube-context") || strings.Contains(err.Error(), "\n") {
		t.Errorf("New of a cluster not ready = %v, want one line matching ErrUnreachable", err)
	}
}
