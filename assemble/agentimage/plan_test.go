package agentimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readAgentDockerfile(t *testing.T, folder string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "agents", folder, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNewPlanNative(t *testing.T) {
	tests := []struct {
		name       string
		dockerfile string
		buildArgs  map[string]string
		effects    []string
	}{
		{"dummy", string(readAgentDockerfile(t, "dummy")), nil, []string{"base", "config"}},
		{"files-demo", string(readAgentDockerfile(t, "files-demo")), nil,
			[]string{"base", "config", "config", "layer", "layer", "layer", "layer", "config", "config"}},
		{"global ARG names the base", "ARG BASE=ssebench-agent\nFROM $BASE AS agent\nCMD [\"x\"]\n", nil, []string{"argument", "base", "config"}},
		{"build argument names the base", "ARG BASE=ubuntu\nFROM ${BASE}\n", map[string]string{"BASE": "ssebench-agent"}, []string{"argument", "base"}},
		{"lower-case instructions and continuations", "from ssebench-agent\nenv A=1 \\\n  B=2\ncopy --chown=model:model --chmod=0644 a b /x/\n", nil, []string{"base", "config", "layer"}},
		{"ADD of a local file", "FROM ssebench-agent\nADD notes.txt /x/\n", nil, []string{"base", "layer"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan([]byte(tc.dockerfile), tc.buildArgs)
			if err != nil {
				t.Fatalf("NewPlan() = %v", err)
			}
			if !p.Native {
				t.Fatalf("NewPlan().Native = false (%s), want true", p.Reason)
			}
			var got []string
			for _, s := range p.Steps {
				got = append(got, s.Effect)
			}
			if diff := cmp.Diff(tc.effects, got); diff != "" {
				t.Errorf("step effects (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewPlanBuildKit(t *testing.T) {
	tests := []struct {
		name, dockerfile, reason string
	}{
		{"apt-demo", string(readAgentDockerfile(t, "apt-demo")), "line 4: RUN needs a container"},
		{"RUN after COPY", "FROM ssebench-agent\nCOPY a /a\nRUN make\nRUN make install\n", "line 3: RUN needs a container"},
		{"COPY --link", "FROM ssebench-agent\nCOPY --link a /a\n", "line 2: COPY --link is left to BuildKit"},
		{"COPY from an image", "FROM ssebench-agent\nCOPY --from=alpine /bin/busybox /bin/\n", "line 2: COPY --from=alpine copies from an image or stage"},
		{"ADD of a URL", "FROM ssebench-agent\nADD https://example.invalid/x.tgz /x/\n", "line 2: ADD https://example.invalid/x.tgz downloads"},
		{"symbolic chmod", "FROM ssebench-agent\nCOPY --chmod=u+x a /a\n", "line 2: --chmod=u+x is a symbolic mode"},
		{"here-document", "FROM ssebench-agent\nCOPY <<EOF /a\nhello\nEOF\n", "line 2: COPY of a here-document is left to BuildKit"},
		{"VOLUME", "FROM ssebench-agent\nVOLUME /data\n", "line 2: VOLUME is not assembled natively"},
		{"FROM --platform", "FROM --platform=linux/amd64 ssebench-agent\n", "line 1: FROM --platform is left to BuildKit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan([]byte(tc.dockerfile), nil)
			if err != nil {
				t.Fatalf("NewPlan() = %v", err)
			}
			if p.Native {
				t.Fatal("NewPlan().Native = true, want false")
			}
			if p.Reason != tc.reason {
				t.Errorf("NewPlan().Reason = %q, want %q", p.Reason, tc.reason)
			}
		})
	}
}

func TestNewPlanErrors(t *testing.T) {
	const df = "agents/bad/Dockerfile"
	tests := []struct {
		name, dockerfile, want string
	}{
		{"empty", "\n# nothing\n", df + ": the Dockerfile is empty: an agent Dockerfile starts FROM ssebench-agent"},
		{"no FROM", "ARG X=1\n", df + ": no FROM instruction: an agent Dockerfile starts FROM ssebench-agent"},
		{"instruction before FROM", "CMD [\"x\"]\nFROM ssebench-agent\n", df + ":1: CMD comes before FROM ssebench-agent: an agent Dockerfile starts FROM ssebench-agent (only ARG may come first)"},
		{"FROM another image", "# comment\nFROM debian:bookworm\n", df + ":2: FROM debian:bookworm: an agent Dockerfile starts FROM ssebench-agent (the tool image)"},
		{"FROM an unset ARG", "ARG BASE\nFROM $BASE\n", df + ":2: FROM : an agent Dockerfile starts FROM ssebench-agent (the tool image)"},
		{"second FROM", "FROM ssebench-agent\nCMD [\"x\"]\nFROM ssebench-agent\n", df + ":3: a second FROM (the first is on line 1): an agent Dockerfile has one stage, FROM ssebench-agent"},
		{"second FROM after RUN", "FROM ssebench-agent AS a\nRUN true\nFROM a\n", df + ":3: a second FROM (the first is on line 1): an agent Dockerfile has one stage, FROM ssebench-agent"},
		{"unknown instruction", "FROM ssebench-agent\nCOPPY a /a\n", df + ":2: unknown instruction: COPPY"},
		{"COPY of a parent path", "FROM ssebench-agent\nCOPY ../secrets /x/\n", df + `:2: COPY source "../secrets": it is outside the context: a COPY reads only files below its context's root`},
		{"COPY of an absolute path that climbs", "FROM ssebench-agent\nCOPY /../../etc/passwd /x\n", df + `:2: COPY source "/../../etc/passwd": it is outside the context: a COPY reads only files below its context's root`},
		{"COPY outside the context, built by BuildKit", "FROM ssebench-agent\nRUN true\nADD a/../../b /x\n", df + `:3: ADD source "a/../../b": it is outside the context: a COPY reads only files below its context's root`},
		{"COPY through an ARG outside the context", "FROM ssebench-agent\nARG SRC=../x\nCOPY $SRC /x\n", df + `:3: COPY source "../x": it is outside the context: a COPY reads only files below its context's root`},
		{"COPY without destination", "FROM ssebench-agent\nCOPY a\n", df + ":2: COPY requires at least two arguments, but only one was provided. Destination could not be determined"},
		{"COPY unknown flag", "FROM ssebench-agent\nCOPY --own=1 a /a\n", df + ":2: COPY: unknown flag: --own"},
		{"bad chmod", "FROM ssebench-agent\nCOPY --chmod=999 a /a\n", df + ":2: invalid chmod parameter: '999'. it should be octal string and between 0 and 07777"},
		{"bad signal", "FROM ssebench-agent\nSTOPSIGNAL SIGNOPE\n", df + ":2: invalid signal: SIGNOPE"},
		{"bad port", "FROM ssebench-agent\nEXPOSE 80/icmp\n", df + `:2: invalid port: "80/icmp": invalid proto: icmp`},
		{"SHELL not JSON", "FROM ssebench-agent\nSHELL /bin/bash -c\n", df + ":2: SHELL requires the arguments to be in JSON form"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPlan([]byte(tc.dockerfile), nil, WithDockerfilePath(df))
			if err == nil {
				t.Fatalf("NewPlan() = nil error, want %q", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("NewPlan() error =\n  %s\nwant\n  %s", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("NewPlan() error is %T, want *Error", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("NewPlan() error spans lines: %q", err)
			}
		})
	}
}

func TestLoadPlanArchive(t *testing.T) {
	dir := t.TempDir()
	var tgz bytes.Buffer
	zw := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: "a.txt", Mode: 0o644, Size: 1}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte("a"))
	tw.Close()
	zw.Close()
	writeTree(t, dir, map[string]string{
		"Dockerfile":  "FROM ssebench-agent\nADD notes.gz /n/\nADD tools.tgz /opt/\n",
		"tools.tgz":   tgz.String(),
		"notes.gz":    string(gzipped(t, "not a tar\n")),
		"agent.yaml":  "name: x\n",
		"unused.file": "",
	})
	p, err := LoadPlan(dir, nil)
	if err != nil {
		t.Fatalf("LoadPlan() = %v", err)
	}
	if p.Native || p.Reason != "line 3: ADD unpacks the archive tools.tgz" {
		t.Errorf("LoadPlan() = Native %v, Reason %q; want BuildKit for the archive on line 3", p.Native, p.Reason)
	}
	if p.Dockerfile != filepath.Join(dir, "Dockerfile") {
		t.Errorf("LoadPlan().Dockerfile = %q, want the file's path", p.Dockerfile)
	}
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.Bytes()
}

func TestExplain(t *testing.T) {
	p, err := NewPlan(readAgentDockerfile(t, "dummy"), nil, WithDockerfilePath("agents/dummy/Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	want := "agents/dummy/Dockerfile: assembled natively (no instruction needs a container)\n" +
		"  line 1  FROM ssebench-agent" + strings.Repeat(" ", 72-len("FROM ssebench-agent")) + "  -> the tool image\n" +
		"  line 2  CMD [\"echo dummy_QAQ\"]" + strings.Repeat(" ", 72-len(`CMD ["echo dummy_QAQ"]`)) + "  -> image config\n"
	if got := p.Explain(); got != want {
		t.Errorf("Explain() =\n%s\nwant\n%s", got, want)
	}

	p, err = NewPlan(readAgentDockerfile(t, "apt-demo"), nil, WithDockerfilePath("agents/apt-demo/Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	got := p.Explain()
	if first, _, _ := strings.Cut(got, "\n"); first != "agents/apt-demo/Dockerfile: built with BuildKit (line 4: RUN needs a container)" {
		t.Errorf("Explain() first line = %q", first)
	}
	if !strings.Contains(got, "  line 4  RUN apt-get update") {
		t.Errorf("Explain() does not list the RUN line:\n%s", got)
	}
}
