package kube_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/runner"
	"github.com/42-b3yond-6ug/ssebench/runner/kube"
	"github.com/42-b3yond-6ug/ssebench/runner/kube/kubetest"
)

// pauseRepo is the test cluster's sandbox image (scripts/k8s-up.sh pushes
// it): a small image every test cluster has, that runs until SIGTERM.
const pauseRepo = "/ssebench/k8s/pause"

func cluster(t *testing.T) (*kube.Runner, kubernetes.Interface, string) {
	t.Helper()
	c := kubetest.Namespace(t, "ssebench-kube")
	return c.Runner, c.Clientset, c.Namespace
}

func pauseImage(t *testing.T) string {
	t.Helper()
	reg := testenv.RequireRegistry(t)
	ref, err := name.ParseReference(reg+pauseRepo+":1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(ref)
	if err != nil {
		t.Fatalf("the pause image of scripts/k8s-up.sh is not in the registry: %v", err)
	}
	return reg + pauseRepo + "@" + desc.Digest.String()
}

func assertNothingLeft(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	var left []string
	if jobs, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, j := range jobs.Items {
			left = append(left, "job/"+j.Name)
		}
	}
	if pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			left = append(left, "pod/"+p.Name)
		}
	}
	if pols, err := cs.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pols.Items {
			left = append(left, "networkpolicy/"+p.Name)
		}
	}
	if len(left) > 0 {
		t.Errorf("left in namespace %s: %v", ns, left)
	}
}

// TestRunImageNotPullable: an image the cluster cannot pull fails the run
// at once, naming why, and nothing is left.
func TestRunImageNotPullable(t *testing.T) {
	r, cs, ns := cluster(t)
	reg := testenv.RequireRegistry(t)
	spec := runner.RunSpec{
		Image: reg + "/ssebench-kube-test/missing@sha256:" + strings.Repeat("0", 64), Pull: true, ID: "ssebench-missing-" + ns,
	}
	start := time.Now()
	res, err := r.Run(context.Background(), spec)
	if err == nil || !strings.Contains(err.Error(), "cannot start pod") || res != nil {
		t.Fatalf("Run of a missing image = %+v, %v; want an error naming the pull failure", res, err)
	}
	t.Logf("failed in %s: %v", time.Since(start).Round(time.Second), err)
	assertNothingLeft(t, cs, ns)
}

// TestRunCancelled: cancelling a run deletes its Job; Run returns the
// Result marked stopped and the context's error, and nothing is left.
func TestRunCancelled(t *testing.T) {
	r, cs, ns := cluster(t)
	img := pauseImage(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spec := runner.RunSpec{Image: img, Pull: true, ID: "ssebench-cancel-" + ns, Entrypoint: []string{"/pause"}}
	go func() {
		// Once the pod runs.
		for ctx.Err() == nil {
			pods, _ := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning {
					cancel()
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	res, err := r.Run(ctx, spec)
	if !errors.Is(err, context.Canceled) || res == nil || !res.Stopped {
		t.Fatalf("Run cancelled = %+v, %v; want a stopped Result and context.Canceled", res, err)
	}
	assertNothingLeft(t, cs, ns)
}
