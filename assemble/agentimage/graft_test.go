package agentimage

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// Answers planted in the test tool image and in the test home: no agent
// layer may hold one.
const (
	secretPatch  = "SECRET-REFERENCE-PATCH-7f3a: the fix"
	secretTest   = "SECRET-HIDDEN-TEST-91c2: the check"
	secretRepo   = "SECRET-PRISTINE-REPO-55d0"
	secretOther  = "SECRET-OTHER-TASK-PATCH-c0de"
	secretConfig = "files:\n  patch: /ssebench/patch.diff\n"
)

var secrets = []string{secretPatch, secretTest, secretRepo, secretOther}

// answersTool is base with what a tool image holds that an agent must not
// see: /ssebench (config, reference patch, hidden tests), /ssebench-repo,
// and the runtime's entrypoint, which is its ENTRYPOINT.
func answersTool(t testing.TB, base v1.Image) v1.Image {
	t.Helper()
	file := func(name, content string, mode int64) oci.Entry {
		return oci.Entry{
			Header: &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(content)), ModTime: toolTime},
			Open:   func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(content)), nil },
		}
	}
	dir := func(name string, mode int64) oci.Entry {
		return oci.Entry{Header: &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, ModTime: toolTime}}
	}
	l, err := oci.WriteLayer(context.Background(), t.TempDir(), []oci.Entry{
		dir("ssebench", 0o700),
		file("ssebench/config.yaml", secretConfig, 0o600),
		file("ssebench/patch.diff", secretPatch+"\n", 0o600),
		dir("ssebench/tests", 0o700),
		file("ssebench/tests/hidden_test.sh", secretTest+"\n", 0o700),
		dir("ssebench-repo", 0o700),
		file("ssebench-repo/HEAD", secretRepo+"\n", 0o600),
		dir("usr", 0o755), dir("usr/local", 0o755), dir("usr/local/bin", 0o755),
		file("usr/local/bin/entrypoint", "#!/bin/sh\nexec \"$@\"\n", 0o755),
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.Append(base, mutate.Addendum{Layer: l, History: v1.History{CreatedBy: "tool layer", Created: v1.Time{Time: toolTime}}})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: toolTime}
	cf.Config.Entrypoint = []string{"/usr/local/bin/entrypoint"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// answersHome is an SSEBench home with an agent folder and a dataset whose
// task folder holds another answer.
func answersHome(t testing.TB, dockerfile string, files map[string]string) (home, dir string) {
	t.Helper()
	home = t.TempDir()
	tree := map[string]string{
		"VERSION": "0.1.0-test\n",
		"datasets/examples/other-1-abc/sse/diffs/patch.diff": secretOther + "\n",
		"agents/hostile/Dockerfile":                          dockerfile,
		"agents/hostile/agent.yaml":                          "name: hostile\n",
	}
	for k, v := range files {
		tree["agents/hostile/"+k] = v
	}
	writeTree(t, home, tree)
	return home, filepath.Join(home, "agents", "hostile")
}

// graftBuild builds the agent folder dir as ssebench does: on the blind
// image, natively or with BuildKit as the plan says, with the workspace of
// the folder, and grafted onto tool through the policy. It returns the
// agent image as stored.
func graftBuild(t testing.TB, client Builder, s *store.Store, tool v1.Image, home, dir string) (v1.Image, error) {
	t.Helper()
	ctx := context.Background()
	blind, err := Blind(tool)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := NewPolicy(tool)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := Workspace(home, dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := LoadPlan(dir, nil)
	if err != nil {
		return nil, err
	}
	ref, err := name.ParseReference("example.invalid/ssebench/agent-graft/" + strings.ToLower(filepath.Base(dir)) + ":1")
	if err != nil {
		t.Fatal(err)
	}
	if plan.Native {
		img, err := Assemble(ctx, blind, plan, dir, ws, WithTempDir(t.TempDir()))
		if err != nil {
			return nil, err
		}
		defer img.Close()
		out, err := Graft(ctx, tool, blind, img, pol)
		if err != nil {
			return nil, err
		}
		if err := s.Write(ctx, ref, out); err != nil {
			t.Fatal(err)
		}
		return s.Image(ref)
	}
	if client == nil {
		t.Fatalf("%s needs BuildKit (%s)", dir, plan.Reason)
	}
	blindRef := name.MustParseReference("example.invalid/ssebench/tool/blind:1")
	if err := s.Write(ctx, blindRef, blind); err != nil {
		t.Fatal(err)
	}
	src, err := ToolFromStore(s, blindRef)
	if err != nil {
		t.Fatal(err)
	}
	when, _ := DefaultTime(tool)
	if _, err := BuildKit(ctx, client, BuildRequest{AgentDir: dir, Home: ws, Tool: src, Platform: testPlatform, Store: s, Ref: ref, Time: when,
		Graft: &GraftTarget{Tool: tool, Blind: blind, Policy: pol}}); err != nil {
		return nil, err
	}
	return s.Image(ref)
}

// findSecrets returns the answers found in the layers img adds to tool,
// compressed or not.
func findSecrets(t testing.TB, img, tool v1.Image, needles []string) []string {
	t.Helper()
	var found []string
	for i, l := range newLayers(t, img, tool) {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range needles {
			if bytes.Contains(b, []byte(s)) {
				found = append(found, fmt.Sprintf("layer %d holds %q", i+1, s))
			}
		}
	}
	return found
}

// osTool is the Debian OS image with the answers on it, for builds that
// run commands.
func osTool(t testing.TB) v1.Image {
	t.Helper()
	ref, err := name.ParseReference(testenv.OSImage(t))
	if err != nil {
		t.Fatal(err)
	}
	p, err := v1.ParsePlatform(testPlatform)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref, remote.WithContext(context.Background()), remote.WithPlatform(*p))
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	return answersTool(t, img)
}

// TestHostileAgentFoldersGrafted: agent folders written as an attacker
// would. Each is refused in one line naming the layer or config, the entry
// and the rule, or builds an image whose agent layers hold none of the
// answers.
func TestHostileAgentFoldersGrafted(t *testing.T) {
	client := newBuildKit(t)
	s, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tool := osTool(t)
	for _, tc := range []struct {
		name, dockerfile string
		files            map[string]string
		want             string // "" means: builds, and finds nothing
	}{
		{"RUN reads /ssebench", `FROM ssebench-agent
RUN cat /ssebench/config.yaml /ssebench/patch.diff /ssebench/tests/* /ssebench-repo/* > /opt/stolen 2>&1; cp -a /ssebench /opt/ssebench 2>/dev/null; ls -laR / 2>/dev/null | grep -i ssebench > /opt/ls; true
CMD ["sh", "-c", "cd $SOURCE_DIR && patch -p1 < /opt/stolen"]
`, nil, ""},
		{"RUN removes /ssebench", "FROM ssebench-agent\nRUN rm -rf /ssebench /ssebench-repo; true\n", nil, ""},
		{"COPY --from=workspace datasets", "FROM ssebench-agent\nRUN true\nCOPY --from=workspace datasets/examples/other-1-abc/sse/diffs/patch.diff /opt/p\n", nil, "not found"},
		{"COPY --from=workspace datasets natively", "FROM ssebench-agent\nCOPY --from=workspace datasets/ /opt/d/\n", nil, "not found"},
		{"RUN replaces the entrypoint", "FROM ssebench-agent\nRUN printf '#!/bin/sh\\nexec sh\\n' > /usr/local/bin/entrypoint\n", nil, "agent layer 1 (sha256:"},
		{"COPY replaces the entrypoint natively", "FROM ssebench-agent\nCOPY --chmod=0755 fake /usr/local/bin/entrypoint\n", map[string]string{"fake": "#!/bin/sh\n"}, "/usr/local/bin/entrypoint"},
		{"RUN makes a setuid shell", "FROM ssebench-agent\nRUN cp /bin/bash /opt/rootsh && chmod 4755 /opt/rootsh\n", nil, "/opt/rootsh: a setuid"},
		{"RUN removes a PATH directory", "FROM ssebench-agent\nRUN rm -rf /usr/local/sbin\n", nil, "whiteout"},
		{"RUN shadows make", "FROM ssebench-agent\nRUN printf '#!/bin/sh\\n' > /usr/local/bin/sh && chmod 755 /usr/local/bin/sh\n", nil, "the command"},
		{"ENV LD_PRELOAD", "FROM ssebench-agent\nRUN true\nENV LD_PRELOAD=/opt/evil.so\n", nil, "the config: ENV LD_PRELOAD"},
		{"ENV GOFLAGS natively", "FROM ssebench-agent\nENV GOFLAGS=-toolexec=/opt/x\n", nil, "the config: ENV GOFLAGS"},
		{"ENV PATH first", "FROM ssebench-agent\nENV PATH=/opt/bin:$PATH\n", nil, "the config: ENV PATH"},
		{"USER root", "FROM ssebench-agent\nRUN true\nUSER root\n", nil, "the config: USER root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Attack(t, "agent folder", "the graft policy: every entry and the config of the agent's layers")
			home, dir := answersHome(t, tc.dockerfile, tc.files)
			img, err := graftBuild(t, client, s, tool, home, dir)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("build = %v, want an image", err)
				}
				if found := findSecrets(t, img, tool, secrets); len(found) > 0 {
					t.Fatalf("the agent layers hold answers: %s", strings.Join(found, "; "))
				}
				return
			}
			if err == nil {
				t.Fatalf("build succeeded, want an error with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(strings.TrimSpace(err.Error()), "\n") && errors.Is(err, ErrRefused) {
				t.Fatalf("build = %v, want one line with %q", err, tc.want)
			}
			for _, sec := range secrets {
				if strings.Contains(err.Error(), sec) {
					t.Fatalf("the error shows an answer: %v", err)
				}
			}
		})
	}
}

// TestHostileAgentLayersHoldNoAnswers builds the example agents, and two thieves
// (one whose RUN copies every file of the image, one that copies the whole
// workspace natively), on a tool image holding answers, in a home holding
// another task's and the example dataset's, and searches their agent
// layers for the answers and the example dataset's hidden tests and PoCs:
// nothing.
func TestHostileAgentLayersHoldNoAnswers(t *testing.T) {
	client := newBuildKit(t)
	s, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tool := osTool(t)
	root := repoRoot(t)
	needles := append([]string(nil), secrets...)
	hidden, _ := filepath.Glob(filepath.Join(root, "datasets", "examples", "*", "sse", "diffs", "*test.diff"))
	pocs, _ := filepath.Glob(filepath.Join(root, "datasets", "examples", "*", "sse", "pocs", "*"))
	for _, f := range append(hidden, pocs...) {
		b, err := os.ReadFile(f)
		if err != nil || len(b) < 32 {
			continue
		}
		needles = append(needles, string(b))
	}
	if len(needles) == len(secrets) {
		t.Fatal("no hidden tests found in datasets/examples")
	}
	home, _ := answersHome(t, "FROM ssebench-agent\nCMD [\"true\"]\n", nil)
	if err := os.CopyFS(filepath.Join(home, "datasets", "examples"), os.DirFS(filepath.Join(root, "datasets", "examples"))); err != nil {
		t.Fatal(err)
	}
	writeTree(t, home, map[string]string{
		"agents/run-thief/Dockerfile":  "FROM ssebench-agent\nRUN tar -cf /opt/all.tar --exclude=./proc --exclude=./sys --exclude=./dev --exclude=./opt -C / . 2>/dev/null; true\n",
		"agents/copy-thief/Dockerfile": "FROM ssebench-agent\nCOPY --from=workspace . /opt/home/\n",
	})
	for _, a := range []string{"dummy", "files-demo", "patcher", "reference", "mcp-probe", "apt-demo", "run-thief", "copy-thief"} {
		t.Run(a, func(t *testing.T) {
			if strings.HasSuffix(a, "-thief") {
				hostile.Attack(t, "agent folder", "the blind build: no /ssebench, no /ssebench-repo, a workspace of the agent's own folder")
			}
			dir := filepath.Join(home, "agents", a)
			if _, err := os.Stat(dir); err != nil {
				if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "agents", a))); err != nil {
					t.Fatal(err)
				}
			}
			img, err := graftBuild(t, client, s, tool, home, dir)
			if err != nil {
				t.Fatalf("build = %v", err)
			}
			if found := findSecrets(t, img, tool, needles); len(found) > 0 {
				t.Fatalf("the agent layers hold answers: %s", strings.Join(found, "; "))
			}
		})
	}
}
