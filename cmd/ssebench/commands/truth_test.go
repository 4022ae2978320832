package commands_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"

	ssebench "github.com/42-b3yond-6ug/ssebench"
	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
)

// mainRun runs ssebench as the binary does (commands.Main) and returns its
// exit status and output.
func mainRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = commands.Main(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestNamesUnknownTaskSuggests(t *testing.T) {
	c := newCLI(t)
	namesHome(t, c, "name: dummy\n")
	code, out, errOut := mainRun(t, "names", "--task", "RUSTSEC-2019-009", "--home", c.home)
	if code == 0 {
		t.Fatalf("names with an unknown task exited 0, printing %q", out)
	}
	if want := `did you mean "RUSTSEC-2019-0009"?`; !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
		t.Errorf("stderr %q, want one line with %s", errOut, want)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
	// Within a named dataset too.
	code, _, errOut = mainRun(t, "names", "--task", "Other-3", "--dataset", "Pilot", "--home", c.home)
	if code == 0 || !strings.Contains(errOut, `did you mean "Other-2"?`) {
		t.Errorf("names --dataset Pilot --task Other-3 = exit %d, %q; want a did-you-mean of Other-2", code, errOut)
	}
}

func TestNoHomeMessage(t *testing.T) {
	newCLI(t) // the working directory is no home, and nothing names one
	const want = "Error: no SSEBench home here; pass --home or run from a checkout\n"
	for _, args := range [][]string{
		{"names", "--task", "t1"},
		{"run", "--task", "t1", "--agent", "dummy"},
		{"eval", "--agents", "dummy"},
		{"assemble", "agent", "--tool", "localhost:5000/x/tool/t1:1", "--agent", "dummy"},
		{"assemble", "tool", "--case", "localhost:5000/x/case/d/t1"},
		{"base-images", "--os-image", "localhost:5000/os:1"},
		{"runtime", "build"},
		{"mirror", "--to", "localhost:5000/y"},
		{"grade", "--predictions", "preds.jsonl"},
		{"dataset", "verify", "examples"},
		{"tasks", "check"},
		{"tasks", "check", "examples"},
		{"tasks", "check", "kvconf-12-afb9ee1", "--agents", "dummy"},
	} {
		code, _, errOut := mainRun(t, args...)
		if code != 1 || errOut != want {
			t.Errorf("ssebench %s outside a home: exit %d, stderr %q; want 1, %q", strings.Join(args, " "), code, errOut, want)
		}
	}
}

// TestStoreMissSaysSo: an image the store lacks is said to be missing, and
// from which registry it is pulled, before the registry is asked; when the
// registry lacks it too, the error says both.
func TestStoreMissSaysSo(t *testing.T) {
	c := newCLI(t)
	c.storeImage(t, "localhost:5000/ssebench/tool/proj-1:1.0.0", toolImage(t)) // a store exists
	host := testenv.StartRegistry(t)
	ref := host + "/miss/tool/proj-1:1.0.0"
	pushed, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := ggremote.Write(pushed, toolImage(t)); err != nil {
		t.Fatal(err)
	}
	_, stderr := c.mustRun(t, "inspect", ref)
	if want := "image " + ref + " is not in the local store (" + c.store + "); pulling it from " + host + "\n"; !strings.HasPrefix(stderr, want) {
		t.Errorf("inspect of an image only the registry has: stderr %q, want it to start with %q", stderr, want)
	}
	none := host + "/miss/none:1"
	_, stderr, err = c.run(t, "inspect", "-q", none)
	oneLine(t, err)
	if err != nil && (!strings.Contains(err.Error(), "image "+none+" is not in the local store") || !strings.Contains(err.Error(), "from its registry")) {
		t.Errorf("inspect of an image nobody has = %v, want the store and the registry named", err)
	}
	if strings.Contains(stderr, "pulling it from") {
		t.Errorf("inspect -q printed the notice: %q", stderr)
	}
}

func TestFlagsCheckedUpFront(t *testing.T) {
	c := newCLI(t)
	writeFiles(t, c.home, map[string]string{"datasets/d/t1/Dockerfile": "FROM scratch\n"})
	for _, tc := range []struct {
		args []string
		want string
	}{
		// names never asks a registry, yet a bad --pull is refused.
		{[]string{"names", "--task", "t1", "--pull", "sometimes"}, `--pull: unknown pull policy "sometimes": use missing, always or never`},
		{[]string{"run", "--task", "t1", "--agent", "dummy", "--timeout", "90x"}, `"90x" is not a duration`},
		{[]string{"eval", "--agents", "dummy", "--timeout", "-5m"}, `"-5m" is negative`},
		{[]string{"names", "--task", "t1", "-q", "-v"}, "--quiet and --verbose contradict"},
	} {
		_, _, err := c.run(t, tc.args...)
		oneLine(t, err)
		if err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ssebench %s: error %q lacks %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// TestVerboseLogsRequestsRedacted: -v shows each registry request, without
// the credentials or the signed upload state; without -v nothing of it.
func TestVerboseLogsRequestsRedacted(t *testing.T) {
	c := newCLI(t)
	t.Setenv("DOCKER_CONFIG", filepath.Join(c.root, "docker"))
	host := testenv.StartAuthRegistry(t, "ci", "s3cret-token")
	if code, _, errOut := mainStdin(t, "s3cret-token\n", "login", host, "-u", "ci", "--password-stdin"); code != 0 {
		t.Fatalf("login: %s", errOut)
	}
	ref := host + "/verbose/tool/proj-1:1.0.0"
	c.storeImage(t, ref, toolImage(t))
	c.storeImage(t, ref+"-quiet", toolImage(t))

	_, pushLog := c.mustRun(t, "push", "-v", ref)
	_, quiet := c.mustRun(t, "push", ref+"-quiet")
	if strings.Contains(quiet, "registry:") {
		t.Errorf("push without -v logged requests:\n%s", quiet)
	}
	_, inspectLog := c.mustRun(t, "inspect", "-v", "--pull=always", ref)
	for what, log := range map[string]string{"push": pushLog, "inspect": inspectLog} {
		if !strings.Contains(log, "registry: --> ") {
			t.Errorf("%s -v logged no request:\n%s", what, log)
		}
		for _, secret := range []string{"s3cret-token", "Y2k6czNjcmV0LXRva2Vu", "_state="} {
			if strings.Contains(log, secret) {
				t.Errorf("%s -v logged %q:\n%s", what, secret, log)
			}
		}
	}
	if !strings.Contains(pushLog, "registry: --> PUT http://"+host+"/v2/verbose/tool/proj-1/blobs/uploads/") {
		t.Errorf("push -v did not log the blob uploads:\n%s", pushLog)
	}
}

// TestReadOnlyCommandsCreateNoStore: on a machine without a store, the
// commands that only look report it empty and create nothing.
func TestReadOnlyCommandsCreateNoStore(t *testing.T) {
	c := newCLI(t)
	for _, args := range [][]string{
		{"store", "ls"}, {"store", "ls", "--json"}, {"store", "du", "--json"}, {"store", "gc"}, {"store", "verify"},
	} {
		out, _ := c.mustRun(t, args...)
		if strings.Contains(strings.Join(args, " "), "--json") && !strings.HasPrefix(out, "[") && !strings.HasPrefix(out, "{") {
			t.Errorf("ssebench %s printed %q, want JSON", strings.Join(args, " "), out)
		}
		if _, err := os.Stat(c.store); err == nil {
			t.Fatalf("ssebench %s created the store %s", strings.Join(args, " "), c.store)
		}
	}
	if out, _ := c.mustRun(t, "store", "verify"); out != "ok "+c.store+"\n" {
		t.Errorf("store verify without a store printed %q", out)
	}
}

// TestDefaultRegistryNotAsked: with no REGISTRY configured, an image under
// the default REGISTRY comes from the store or nowhere: the error says so
// and how to use a registry, and nothing is fetched.
func TestDefaultRegistryNotAsked(t *testing.T) {
	c := newCLI(t)
	ref := naming.DefaultRegistry + "/tool/proj-1:" + ssebench.Version()
	c.storeImage(t, "localhost:5000/ssebench/other:1", toolImage(t)) // a store exists
	_, stderr, err := c.run(t, "inspect", ref)
	oneLine(t, err)
	if err != nil && (!strings.Contains(err.Error(), "image "+ref+" is not in the local store ("+c.store+"), and REGISTRY is not configured") ||
		strings.Contains(err.Error(), "fetching")) {
		t.Errorf("inspect of a default-REGISTRY image the store lacks = %v, want the store miss and no fetch", err)
	}
	if strings.Contains(stderr, "pulling it from") {
		t.Errorf("inspect announced a pull from the default registry: %q", stderr)
	}
	c.storeImage(t, ref, toolImage(t))
	if out, _ := c.mustRun(t, "inspect", ref); !strings.Contains(out, "(from the store)") {
		t.Errorf("inspect of the stored image printed:\n%s", out)
	}
}
