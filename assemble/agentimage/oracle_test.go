package agentimage

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// The oracle tests build the same Dockerfiles natively and with BuildKit
// on the same tool image and compare the results. They need a buildkitd
// (scripts/setup.sh); testenv skips them under -short or without one.

var testPlatform = "linux/" + runtime.GOARCH

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func newBuildKit(t testing.TB) *buildkit.Client {
	t.Helper()
	addr := testenv.RequireBuildKit(t)
	c, err := buildkit.New(context.Background(), buildkit.WithAddress(addr), buildkit.WithProgress(logWriter{t}),
		buildkit.WithProgressMode(buildkit.ProgressPlain), buildkit.WithTempDir(t.TempDir()))
	if err != nil {
		t.Fatalf("buildkit.New() = %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// storeTool writes the stand-in tool image to a fresh store and returns the
// store, the entry's reference and the image as the store gives it back.
func storeTool(t testing.TB) (*store.Store, name.Reference, v1.Image) {
	t.Helper()
	s, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ref := name.MustParseReference("example.invalid/ssebench/tool/oracle:1.0.0")
	if err := s.Write(context.Background(), ref, toolImage(t)); err != nil {
		t.Fatal(err)
	}
	img, err := s.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	return s, ref, img
}

// repoRoot is the SSEBench home of this checkout.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// featuresDockerfile exercises what the native path implements: ARG in
// FROM, ENV, WORKDIR-relative destinations, globs, --chown by id and by
// name, --chmod, directory copies into new and existing directories,
// symlinks, .dockerignore with an exception, the workspace context, USER
// before WORKDIR, and the config instructions.
const featuresDockerfile = `ARG BASE=ssebench-agent
FROM ${BASE}
ARG WHO=agent
ENV APP=/srv/app MODE=demo
WORKDIR $APP
COPY --chown=${WHO}:staff --chmod=0640 conf/*.yaml conf/
COPY tree/ ./tree/
COPY tree /opt/keep/
COPY --chown=1234 single.txt /opt/single
COPY --chmod=0700 bin/ /bin/
COPY link-to-single.txt notes/
COPY *.md /docs/
COPY --from=workspace ws.txt /ws/
COPY --chmod=0750 single.txt /made/by/copy/
ADD single.txt added.txt
USER agent
WORKDIR sub/dir
EXPOSE 8080 53/udp 9000-9001
STOPSIGNAL SIGINT
LABEL a=b "c d"="e f"
ENTRYPOINT ["/usr/local/bin/entrypoint", "--"]
SHELL ["/bin/bash", "-c"]
CMD echo "$MODE"
`

func featuresContext(t testing.TB) (dir, home string) {
	t.Helper()
	dir, home = t.TempDir(), t.TempDir()
	writeTree(t, dir, map[string]string{
		"Dockerfile":            featuresDockerfile,
		".dockerignore":         "**/*.tmp\n!tree/keepme.tmp\nsecret/\n",
		"conf/a.yaml":           "a: 1\n",
		"conf/b.yaml":           "b: 2\n",
		"conf/c.txt":            "not copied\n",
		"tree/x|0600":           "x\n",
		"tree/sub/y|0755":       "#!/bin/sh\necho y\n",
		"tree/sub/link":         "-> y",
		"tree/sub/setgid/|2775": "",
		"tree/ignored.tmp":      "ignored\n",
		"tree/keepme.tmp":       "kept by an exception\n",
		"tree/empty/":           "",
		"single.txt":            "single\n",
		"link-to-single.txt":    "-> single.txt",
		"bin/tool|0755":         "#!/bin/sh\n",
		"README.md":             "# readme\n",
		"NOTES.md":              "notes\n",
		"secret/key":            "do not copy\n",
	})
	writeTree(t, home, map[string]string{"ws.txt": "from the workspace\n"})
	return dir, home
}

// configOf picks the config fields an agent image is judged by.
func configOf(t testing.TB, img v1.Image) v1.Config {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	return v1.Config{
		Entrypoint: c.Entrypoint, Cmd: c.Cmd, Env: c.Env, WorkingDir: c.WorkingDir, User: c.User,
		Labels: c.Labels, ExposedPorts: c.ExposedPorts, StopSignal: c.StopSignal, Shell: c.Shell,
		ArgsEscaped: c.ArgsEscaped,
	}
}

func TestOracleNativeMatchesBuildKit(t *testing.T) {
	client := newBuildKit(t)
	ctx := context.Background()
	store, toolRef, tool := storeTool(t)
	toolSrc, err := ToolFromStore(store, toolRef)
	if err != nil {
		t.Fatal(err)
	}
	root := repoRoot(t)
	fdir, fhome := featuresContext(t)
	when, err := DefaultTime(tool)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		dir, home string
	}{
		{"dummy", filepath.Join(root, "agents", "dummy"), root},
		{"files-demo", filepath.Join(root, "agents", "files-demo"), root},
		{"features", fdir, fhome},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := LoadPlan(tc.dir, nil)
			if err != nil {
				t.Fatalf("LoadPlan() = %v", err)
			}
			if !plan.Native {
				t.Fatalf("LoadPlan().Native = false (%s), want a native plan", plan.Reason)
			}
			start := time.Now()
			native, err := Assemble(ctx, tool, plan, tc.dir, tc.home, WithTempDir(t.TempDir()))
			if err != nil {
				t.Fatalf("Assemble() = %v", err)
			}
			defer native.Close()
			if err := validate.Image(native); err != nil {
				t.Fatalf("validate.Image(native) = %v", err)
			}
			nativeTime := time.Since(start)

			ref, err := name.ParseReference("example.invalid/ssebench/agent-oracle/" + tc.name + ":1")
			if err != nil {
				t.Fatal(err)
			}
			start = time.Now()
			// NoCache: BuildKit keys a COPY by content, so a cached result
			// would carry the file times of an earlier checkout.
			if _, err := BuildKit(ctx, client, BuildRequest{AgentDir: tc.dir, Home: tc.home, Tool: toolSrc, Platform: testPlatform,
				Store: store, Ref: ref, Time: when, NoCache: true}); err != nil {
				t.Fatalf("BuildKit() = %v", err)
			}
			t.Logf("%s: native %v, BuildKit %v", tc.name, nativeTime, time.Since(start))
			built, err := store.Image(ref)
			if err != nil {
				t.Fatal(err)
			}

			if diff := cmp.Diff(configOf(t, built), configOf(t, native)); diff != "" {
				t.Errorf("config (-BuildKit +native):\n%s", diff)
			}
			bl, nl := newLayers(t, built, tool), newLayers(t, native, tool)
			if len(bl) != len(nl) {
				t.Errorf("new layers: BuildKit %d, native %d", len(bl), len(nl))
			}
			// Every field, times included: both sides clamp them to the
			// build time.
			if diff := cmp.Diff(flatten(t, bl), flatten(t, nl)); diff != "" {
				t.Errorf("new layers' files (-BuildKit +native):\n%s", diff)
			}
			// History: the same instructions, the same created_by text, the
			// same empty_layer flags; only comments and times differ.
			if diff := cmp.Diff(historyOf(t, built), historyOf(t, native)); diff != "" {
				t.Errorf("history (-BuildKit +native):\n%s", diff)
			}
		})
	}
}

func historyOf(t testing.TB, img v1.Image) []string {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range cf.History {
		out = append(out, fmt.Sprintf("%s empty=%v", h.CreatedBy, h.EmptyLayer))
	}
	return out
}
