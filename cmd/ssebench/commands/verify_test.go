package commands_test

import (
	"archive/tar"
	"github.com/42-b3yond-6ug/ssebench/assemble/agentimage"
	"strconv"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

func TestVerify(t *testing.T) {
	const (
		good = "localhost:5000/ssebench/tool/proj-1:1.0.0"
		bad  = "localhost:5000/ssebench/case/pilot/proj-1"
	)
	c := newCLI(t)
	c.storeImage(t, good, toolImage(t))
	c.storeImage(t, bad, caseImage(t))

	t.Run("assembled tool image", func(t *testing.T) {
		out, stderr := c.mustRun(t, "verify", "--pull=never", good)
		if want := "ok " + good + "\n"; out != want {
			t.Errorf("verify printed %q, want %q (stderr %q)", out, want, stderr)
		}
	})

	t.Run("case image", func(t *testing.T) {
		out, stderr, err := c.run(t, "verify", "--pull=never", "--source", "/src/proj", bad)
		oneLine(t, err)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		for _, l := range lines {
			if !strings.HasPrefix(l, "FAIL ") {
				t.Errorf("line %q is not a FAIL line", l)
			}
		}
		for _, want := range []string{
			"FAIL entrypoint: ENTRYPOINT is []",
			"FAIL mode: /var/lib/ssebench: missing",
			"FAIL other-write: /usr/bin/tool: mode 0777",
			"FAIL owner: /src/proj/main.go: owned by 0:0, want 1000:1000",
			"FAIL accounts: /etc/passwd: no user sse-runner",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("verify output lacks %q:\n%s", want, out)
			}
		}
		if want := bad + ": " + strconv.Itoa(len(lines)) + " checks failed\n"; stderr != want {
			t.Errorf("stderr = %q, want %q", stderr, want)
		}
	})

	t.Run("no SOURCE_DIR recorded", func(t *testing.T) {
		_, _, err := c.run(t, "verify", "--pull=never", bad)
		oneLine(t, err)
		if err != nil && !strings.Contains(err.Error(), "pass --source") {
			t.Errorf("error %q does not say to pass --source", err)
		}
	})
}

// TestHostileVerifyPrebuiltAgent: verify --tool checks the layers and the
// config an agent image adds to its tool image against the agent policy,
// so a --prebuilt image that breaks it is refused before it runs.
func TestHostileVerifyPrebuiltAgent(t *testing.T) {
	const (
		tool = "localhost:5000/ssebench/tool/proj-1:1.0.0"
		good = "localhost:5000/ssebench/agent-good/proj-1:1.0.0"
	)
	c := newCLI(t)
	ti := toolImage(t)
	c.storeImage(t, tool, ti)
	// An agent image is its tool image without the answers (the blind
	// layer) plus the agent's layers.
	blind, err := agentimage.Blind(ti)
	if err != nil {
		t.Fatal(err)
	}
	agent := func(t *testing.T, f func(cf *v1.ConfigFile), entries ...entry) v1.Image {
		img, err := mutate.AppendLayers(blind, tarLayer(t, entries...))
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		if f != nil {
			f(cf)
		}
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
		return img
	}
	c.storeImage(t, good, agent(t, nil, folder("opt/", 0o755), folder("opt/agent/", 0o755), file("opt/agent/run.sh", 0o755, "#!/bin/sh\n")))
	t.Run("a good agent image", func(t *testing.T) {
		out, stderr := c.mustRun(t, "verify", "--pull=never", "--tool", tool, good)
		if want := "ok " + good + "\n"; out != want {
			t.Errorf("verify printed %q, want %q (stderr %q)", out, want, stderr)
		}
	})
	for i, tc := range []struct {
		name    string
		cfg     func(cf *v1.ConfigFile)
		entries []entry
		want    string
	}{
		{"a setuid shell", nil, []entry{{name: "opt/rootsh", typ: tar.TypeReg, mode: 0o4755, body: "x"}}, "FAIL agent policy: /opt/rootsh: agent layer 1"},
		{"a replaced daemon", nil, []entry{file("ssebench/ssebench-daemon", 0o755, "#!/bin/sh\n")}, "/ssebench/ssebench-daemon"},
		{"ENV LD_PRELOAD", func(cf *v1.ConfigFile) { cf.Config.Env = append(cf.Config.Env, "LD_PRELOAD=/opt/x.so") }, []entry{folder("opt/", 0o755)}, "the config: ENV LD_PRELOAD"},
		{"USER root", func(cf *v1.ConfigFile) { cf.Config.User = "root" }, []entry{folder("opt/", 0o755)}, "the config: USER root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "agent images: verify --tool")
			ref := "localhost:5000/ssebench/agent-bad" + strconv.Itoa(i) + "/proj-1:1.0.0"
			c.storeImage(t, ref, agent(t, tc.cfg, tc.entries...))
			out, _, err := c.run(t, "verify", "--pull=never", "--tool", tool, ref)
			oneLine(t, err)
			if err == nil || !strings.Contains(out, tc.want) {
				t.Errorf("verify --tool = %v, printed:\n%s\nwant a failure with %q", err, out, tc.want)
			}
		})
	}
	t.Run("no blind layer", func(t *testing.T) {
		// An agent image of the tool image and the agent's layers only,
		// as before the grade ran apart: its container would hold the
		// answers.
		hostile.Case(t, "agent images: verify --tool")
		img, err := mutate.AppendLayers(ti, tarLayer(t, folder("opt/", 0o755)))
		if err != nil {
			t.Fatal(err)
		}
		const ref = "localhost:5000/ssebench/agent-unblind/proj-1:1.0.0"
		c.storeImage(t, ref, img)
		out, _, err := c.run(t, "verify", "--pull=never", "--tool", tool, ref)
		if err == nil || !strings.Contains(out, "does not start with the layers") {
			t.Errorf("verify --tool on an agent image with the answers = %v, printed:\n%s", err, out)
		}
	})
	t.Run("another base", func(t *testing.T) {
		hostile.Case(t, "agent images: verify --tool")
		out, _, err := c.run(t, "verify", "--pull=never", "--tool", good, tool)
		if err == nil || !strings.Contains(out, "does not start with the layers") {
			t.Errorf("verify --tool on an image not built on it = %v, printed:\n%s", err, out)
		}
	})
}
