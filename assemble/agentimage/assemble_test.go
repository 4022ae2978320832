package agentimage

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// assembleT plans dockerfile and assembles it on tool with the context dir
// and workspace home, failing the test on error.
func assembleT(t *testing.T, tool v1.Image, dockerfile, dir, home string, buildArgs map[string]string, opts ...Option) *Image {
	t.Helper()
	p, err := NewPlan([]byte(dockerfile), buildArgs)
	if err != nil {
		t.Fatalf("NewPlan() = %v", err)
	}
	img, err := Assemble(context.Background(), tool, p, dir, home, append([]Option{WithTempDir(t.TempDir())}, opts...)...)
	if err != nil {
		t.Fatalf("Assemble() = %v", err)
	}
	t.Cleanup(func() { img.Close() })
	if err := validate.Image(img); err != nil {
		t.Fatalf("validate.Image() = %v", err)
	}
	return img
}

func TestAssembleDummy(t *testing.T) {
	tool := toolImage(t)
	img := assembleT(t, tool, string(readAgentDockerfile(t, "dummy")), t.TempDir(), t.TempDir(), nil)

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := v1.Config{
		Entrypoint:  []string{"/usr/local/bin/entrypoint"},
		Cmd:         []string{"echo dummy_QAQ"},
		Env:         []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root"},
		Labels:      map[string]string{"tool": "yes"},
		ArgsEscaped: true,
	}
	if diff := cmp.Diff(want, cf.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if n := len(newLayers(t, img, tool)); n != 0 {
		t.Errorf("the dummy agent added %d layers, want none", n)
	}
	last := cf.History[len(cf.History)-1]
	if last.CreatedBy != `CMD ["echo dummy_QAQ"]` || !last.EmptyLayer || !last.Created.Time.Equal(toolTime) {
		t.Errorf("last history entry = %+v, want CMD [\"echo dummy_QAQ\"], empty, at the tool image's time", last)
	}
	if !cf.Created.Time.Equal(toolTime) {
		t.Errorf("created = %v, want the tool image's %v", cf.Created.Time, toolTime)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	toolDigest, _ := tool.Digest()
	if got := m.Annotations[AnnotationBaseDigest]; got != toolDigest.String() {
		t.Errorf("manifest annotation %s = %q, want the tool image's digest %s", AnnotationBaseDigest, got, toolDigest)
	}
}

func TestAssembleConfig(t *testing.T) {
	tool := toolImage(t)
	tests := []struct {
		name       string
		dockerfile string
		buildArgs  map[string]string
		want       v1.Config
	}{{
		name:       "ENV replaces in place and appends; pairs expand from before the instruction",
		dockerfile: "FROM ssebench-agent\nENV HOME=/home/agent NEW=$HOME\nENV PATH=/opt/bin:$PATH\n",
		want: v1.Config{
			Entrypoint: []string{"/usr/local/bin/entrypoint"}, Labels: map[string]string{"tool": "yes"},
			Env: []string{"PATH=/opt/bin:/usr/local/bin:/usr/bin:/bin", "HOME=/home/agent", "NEW=/root"},
		},
	}, {
		name:       "ENTRYPOINT drops the inherited CMD, shell forms use SHELL",
		dockerfile: "FROM ssebench-agent\nSHELL [\"/bin/bash\", \"-lc\"]\nENTRYPOINT [\"/usr/local/bin/entrypoint\", \"--\"]\nCMD go\n",
		want: v1.Config{
			Entrypoint: []string{"/usr/local/bin/entrypoint", "--"}, Cmd: []string{"/bin/bash", "-lc", "go"},
			Shell: []string{"/bin/bash", "-lc"}, ArgsEscaped: true, Labels: map[string]string{"tool": "yes"},
			Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root"},
		},
	}, {
		name:       "CMD before ENTRYPOINT stays",
		dockerfile: "FROM ssebench-agent\nCMD [\"a\"]\nENTRYPOINT [\"/usr/local/bin/entrypoint\", \"--\"]\n",
		want: v1.Config{
			Entrypoint: []string{"/usr/local/bin/entrypoint", "--"}, Cmd: []string{"a"}, ArgsEscaped: true, Labels: map[string]string{"tool": "yes"},
			Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root"},
		},
	}, {
		name: "ARG defaults, build arguments, predefined platform arguments",
		dockerfile: "ARG WHO=nobody\nFROM ssebench-agent\nARG WHO\nARG ARCH_FROM=$TARGETARCH\nARG TARGETARCH\nARG FLAVOR=plain\n" +
			"LABEL who=$WHO arch=${TARGETARCH} flavor=$FLAVOR unset=${ARCH_FROM}\nUSER $WHO\nSTOPSIGNAL SIGKILL\nEXPOSE 8080 53/udp\n",
		buildArgs: map[string]string{"FLAVOR": "spicy", "UNDECLARED": "x"},
		want: v1.Config{
			Entrypoint: []string{"/usr/local/bin/entrypoint"}, User: "nobody", StopSignal: "SIGKILL",
			Labels:       map[string]string{"tool": "yes", "who": "nobody", "arch": runtime.GOARCH, "flavor": "spicy", "unset": ""},
			ExposedPorts: map[string]struct{}{"8080/tcp": {}, "53/udp": {}},
			Env:          []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root"},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			img := assembleT(t, tool, tc.dockerfile, t.TempDir(), t.TempDir(), tc.buildArgs)
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, cf.Config); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAssembleFiles(t *testing.T) {
	tool := toolImage(t)
	dir, home := featuresContext(t)
	when := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	img := assembleT(t, tool, featuresDockerfile, dir, home, nil, WithTime(when))
	got := flatten(t, newLayers(t, img, tool))

	src := srcTime
	want := map[string]fileInfo{
		// --chown by name (passwd and group of the tool image), --chmod,
		// a glob that leaves conf/c.txt out; conf/ is created with the
		// owner and the --chmod mode, as fsutil's MkdirAll does.
		"/srv/app/conf":        {Type: "dir", Mode: 0o640, UID: 1234, GID: 50, MTime: when},
		"/srv/app/conf/a.yaml": {Type: "file", Mode: 0o640, UID: 1234, GID: 50, Size: 5, MTime: src},
		// Existing directories keep mode and owner; a directory copied
		// into takes the source's time.
		"/opt/keep":     {Type: "dir", Mode: 0o700, UID: 7, GID: 7, MTime: src},
		"/opt/keep/x":   {Type: "file", Mode: 0o600, Size: 2, MTime: src},
		"/opt/single":   {Type: "file", Mode: 0o644, UID: 1234, GID: 1234, Size: 7, MTime: src},
		"/usr/bin/tool": {Type: "file", Mode: 0o700, Size: 10, MTime: src},
		// .dockerignore: **/*.tmp and secret/ are left out, the exception
		// brings keepme.tmp back.
		"/srv/app/tree/keepme.tmp":          {Type: "file", Mode: 0o644, Size: 21, MTime: src},
		"/srv/app/tree/sub/link":            {Type: "symlink", Mode: 0o777, Link: "y", MTime: src},
		"/srv/app/tree/sub/setgid":          {Type: "dir", Mode: 0o2775, MTime: src},
		"/srv/app/notes/link-to-single.txt": {Type: "file", Mode: 0o644, Size: 7, MTime: src},
		"/ws/ws.txt":                        {Type: "file", Mode: 0o644, Size: 19, MTime: src},
		"/made/by/copy":                     {Type: "dir", Mode: 0o750, MTime: when},
		"/srv/app/sub/dir":                  {Type: "dir", Mode: 0o755, UID: 1234, GID: 2345, MTime: when},
	}
	for p, w := range want {
		g, ok := got[p]
		if !ok {
			t.Errorf("%s is missing from the new layers", p)
			continue
		}
		g.SHA256 = ""
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("%s (-want +got):\n%s", p, diff)
		}
	}
	for _, p := range []string{"/srv/app/conf/c.txt", "/srv/app/tree/ignored.tmp", "/secret", "/srv/app/secret", "/usr/bin/sh", "/bin"} {
		if _, ok := got[p]; ok {
			t.Errorf("%s is in the new layers, want it left out", p)
		}
	}
	if n := len(newLayers(t, img, tool)); n != 12 {
		t.Errorf("new layers = %d, want 12 (two WORKDIR, ten COPY and ADD)", n)
	}
}

// A fresh checkout's files are newer than the build time: they take the
// build time, so that two clones of one agent folder give one image.
func TestAssembleClampsNewerFileTimes(t *testing.T) {
	tool := toolImage(t)
	dir, home := featuresContext(t)
	when := srcTime.Add(-time.Hour)
	got := flatten(t, newLayers(t, assembleT(t, tool, featuresDockerfile, dir, home, nil, WithTime(when)), tool))
	for _, p := range []string{"/opt/single", "/opt/keep", "/srv/app/tree/sub/link", "/ws/ws.txt"} {
		if fi, ok := got[p]; !ok {
			t.Errorf("%s is missing from the new layers", p)
		} else if !fi.MTime.Equal(when) {
			t.Errorf("%s: mtime %s, want the build time %s (the source's %s is newer)", p, fi.MTime, when, srcTime)
		}
	}
}

func TestAssembleDeterministic(t *testing.T) {
	tool := toolImage(t)
	dir, home := featuresContext(t)
	var digests []v1.Hash
	for range 2 {
		img := assembleT(t, tool, featuresDockerfile, dir, home, nil)
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	if digests[0] != digests[1] {
		t.Errorf("two assemblies gave %s and %s, want the same digest", digests[0], digests[1])
	}
}

func TestAssembleErrors(t *testing.T) {
	tool := toolImage(t)
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret": "s\n"})
	var tgz bytes.Buffer
	tgz.Write(tarGz(t))
	tests := []struct {
		name       string
		dockerfile string
		files      map[string]string
		want       string
		buildKit   bool
	}{
		{"missing source", "FROM ssebench-agent\nCOPY nope.txt /x\n", nil,
			`Dockerfile:2: COPY source "nope.txt": nope.txt: not found in the build context (the agent folder)`, false},
		{"source excluded by .dockerignore", "FROM ssebench-agent\nCOPY secret/key /x\n", map[string]string{".dockerignore": "secret\n", "secret/key": "k"},
			`Dockerfile:2: COPY source "secret/key": secret: not found (.dockerignore excludes it) in the build context (the agent folder)`, false},
		{"symlink out of the context", "FROM ssebench-agent\nCOPY escape /x\n", map[string]string{"escape": "-> ../../../../../../../../" + strings.TrimPrefix(outside, "/") + "/secret"},
			`Dockerfile:2: COPY source "escape": a symlink leads out of the build context (the agent folder) in the build context (the agent folder)`, false},
		{"directory onto a file", "FROM ssebench-agent\nCOPY d /etc/passwd\n", map[string]string{"d/f": "f"},
			"Dockerfile:2: cannot copy a directory to /etc/passwd: it is not a directory", false},
		{"file onto a directory's place", "FROM ssebench-agent\nCOPY f /etc/passwd/x\n", map[string]string{"f": "f"},
			"Dockerfile:2: cannot create directory /etc/passwd: /etc/passwd is not a directory", false},
		{"ADD of an archive", "FROM ssebench-agent\nADD t.tgz /opt/\n", map[string]string{"t.tgz": tgz.String()},
			"Dockerfile:2: ADD unpacks the archive t.tgz: needs BuildKit", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			p, err := NewPlan([]byte(tc.dockerfile), nil)
			if err != nil {
				t.Fatalf("NewPlan() = %v", err)
			}
			spool := t.TempDir()
			_, err = Assemble(context.Background(), tool, p, dir, t.TempDir(), WithTempDir(spool))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Assemble() error =\n  %v\nwant\n  %s", err, tc.want)
			}
			if got := errors.Is(err, ErrNeedsBuildKit); got != tc.buildKit {
				t.Errorf("errors.Is(err, ErrNeedsBuildKit) = %v, want %v", got, tc.buildKit)
			}
			if ents, _ := os.ReadDir(spool); len(ents) != 0 {
				t.Errorf("Assemble() left %d files in the spool directory", len(ents))
			}
		})
	}
}

func TestAssembleRefusesBuildKitPlans(t *testing.T) {
	p, err := NewPlan(readAgentDockerfile(t, "apt-demo"), nil, WithDockerfilePath("agents/apt-demo/Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Assemble(context.Background(), toolImage(t), p, t.TempDir(), t.TempDir())
	if !errors.Is(err, ErrNeedsBuildKit) || err.Error() != "agents/apt-demo/Dockerfile: line 4: RUN needs a container: needs BuildKit" {
		t.Errorf("Assemble() = %v, want an ErrNeedsBuildKit error naming the RUN", err)
	}
}

func TestAssembleNeedsTempDirForLayers(t *testing.T) {
	p, err := NewPlan([]byte("FROM ssebench-agent\nWORKDIR /w\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Assemble(context.Background(), toolImage(t), p, t.TempDir(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "see agentimage.WithTempDir") {
		t.Errorf("Assemble() = %v, want an error pointing at WithTempDir", err)
	}
}

func tarGz(t *testing.T) []byte {
	t.Helper()
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	if err := tw.WriteHeader(&tar.Header{Name: "a.txt", Mode: 0o644, Size: 2}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte("a\n"))
	tw.Close()
	return gzipped(t, tb.String())
}
