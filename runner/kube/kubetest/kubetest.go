// Package kubetest gives integration tests the test cluster of
// scripts/k8s-up.sh: its kubeconfig, and a namespace of the test's own
// that is deleted when the test ends.
package kubetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/runner/kube"
)

// saTimeout bounds the wait for a new namespace's default service
// account, which pods need and the controller-manager makes in well under
// a second.
const saTimeout = 30 * time.Second

// Cluster is the test cluster as one test sees it.
type Cluster struct {
	// Kubeconfig is the cluster's kubeconfig file.
	Kubeconfig string
	// Namespace is the test's own, deleted at its end.
	Namespace string
	// Clientset speaks to the API server with admin rights.
	Clientset kubernetes.Interface
	// Runner is a kube.Runner in Namespace.
	Runner *kube.Runner
}

// Namespace connects to the test cluster (failing under CI=true when
// there is none, skipping otherwise) and makes a namespace named
// prefix-<random> for the test.
func Namespace(t testing.TB, prefix string) *Cluster {
	t.Helper()
	kubeconfig := testenv.RequireKubernetes(t, func(ctx context.Context, path string) error {
		_, err := kube.New(ctx, kube.WithKubeconfig(path))
		return err
	})
	ctx := context.Background()
	// The full clientset, which the Runner does without (it links every
	// API group into ssebench).
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	rand.Read(b)
	ns := prefix + "-" + hex.EncodeToString(b)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	t.Cleanup(func() { cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	deadline := time.Now().Add(saTimeout)
	for {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s has no default service account after %s: %v", ns, saTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r, err := kube.New(ctx, kube.WithKubeconfig(kubeconfig), kube.WithNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	return &Cluster{Kubeconfig: kubeconfig, Namespace: ns, Clientset: cs, Runner: r}
}
