package evaluate_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/runner/kube"
	"github.com/42-b3yond-6ug/ssebench/runner/kube/kubetest"
)

// TestEvaluateKubernetes evaluates dummy and patcher on the three example
// tasks as Jobs on the test cluster, three at once, kills ssebench in the
// middle and resumes: every run once, the grades the patcher's patches
// call for, and nothing left in the cluster.
func TestEvaluateKubernetes(t *testing.T) {
	c := kubetest.Namespace(t, "ssebench-eval")
	kubeconfig, ns, cs := c.Kubeconfig, c.Namespace, c.Clientset
	w := setup(t)
	ctx := context.Background()

	bin := buildCLI(t, w)
	kubeArgs := []string{"--backend", "kubernetes", "--kubeconfig", kubeconfig, "--namespace", ns, "--jobs", "3"}
	runsDir := filepath.Join(w.work, "runs-kube")
	args := append([]string{"eval", "--agents", strings.Join(agents, ","), "--local", filepath.Join(w.home, "datasets", "examples"),
		"--timeout", "600", "--runs-dir", runsDir}, kubeArgs...)
	// Killed once Jobs run: the first run folder is the sign.
	cmd := w.command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var edir string
	deadline := time.Now().Add(20 * time.Minute)
	for time.Now().Before(deadline) {
		if m, _ := filepath.Glob(filepath.Join(runsDir, "eval-*")); len(m) == 1 {
			edir = m[0]
			if done, _ := evaluate.Done(edir); len(done) > 0 {
				break
			}
		}
		time.Sleep(time.Second)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if edir == "" {
		t.Fatalf("no evaluation folder:\n%s", stderr.String())
	}
	done, _ := evaluate.Done(edir)
	jobs, _ := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	t.Logf("killed with %d runs done and %d Jobs in the cluster", len(done), len(jobs.Items))

	w.cli(t, bin, append([]string{"eval", "--resume", edir}, kubeArgs...)...)
	ents, _ := os.ReadDir(filepath.Join(edir, evaluate.RunsDir))
	if len(ents) != 6 {
		t.Errorf("%d run folders after resuming, want 6 (no duplicates)", len(ents))
	}
	for _, o := range outcomes(t, edir) {
		task, agent, _ := strings.Cut(o, " ")
		agent, _, _ = strings.Cut(agent, " ")
		want := agent == "patcher" && passes[task]
		if got := strings.HasSuffix(o, "PASSED"); got != want {
			t.Errorf("%s: passed %v, want %v", o, got, want)
		}
	}
	sel := metav1.ListOptions{LabelSelector: kube.ManagedLabel + "=ssebench"}
	if left, _ := cs.BatchV1().Jobs(ns).List(ctx, sel); len(left.Items) > 0 {
		t.Errorf("%d Jobs left in the cluster", len(left.Items))
	}
	if left, _ := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); len(left.Items) > 0 {
		t.Errorf("%d pods left in the cluster", len(left.Items))
	}
	if left, _ := cs.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{}); len(left.Items) > 0 {
		t.Errorf("%d NetworkPolicies left in the cluster", len(left.Items))
	}
}
