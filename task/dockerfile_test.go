package task

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const validDockerfile = `ARG SSEBENCH_REGISTRY=ghcr.io/42-b3yond-6ug/ssebench
FROM ${SSEBENCH_REGISTRY}/base-generic-go:1.0.0
WORKDIR /src/gjson
RUN true
COPY sse/ /ssebench/
`

func TestBase(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		name       string
		dockerfile string
		want       string
		wantErr    string
	}{{
		name:       "tag",
		dockerfile: validDockerfile,
		want:       "base-generic-go:1.0.0",
	}, {
		name:       "digest",
		dockerfile: "ARG SSEBENCH_REGISTRY\nFROM $SSEBENCH_REGISTRY/base-generic-c@" + digest + "\n",
		want:       "base-generic-c@" + digest,
	}, {
		name:       "tag and digest",
		dockerfile: "ARG SSEBENCH_REGISTRY\nFROM ${SSEBENCH_REGISTRY}/base-generic-c:1.0.0@" + digest + "\n",
		want:       "base-generic-c:1.0.0@" + digest,
	}, {
		name:       "other global args substituted",
		dockerfile: "ARG SSEBENCH_REGISTRY\nARG LANG=rust\nARG BASE=\"base-generic-${LANG}\" V=1.2.0\nFROM ${SSEBENCH_REGISTRY}/${BASE}:$V\n",
		want:       "base-generic-rust:1.2.0",
	}, {
		name:       "last FROM, through a named stage",
		dockerfile: "ARG SSEBENCH_REGISTRY\nFROM golang:1.22 AS tools\nFROM ${SSEBENCH_REGISTRY}/base-generic-go:1.0.0 AS base\nFROM base\nCOPY --from=tools /go/bin/x /x\n",
		want:       "base-generic-go:1.0.0",
	}, {
		name:       "lower-case instructions",
		dockerfile: "arg SSEBENCH_REGISTRY\nfrom ${SSEBENCH_REGISTRY}/base-generic-go:1.0.0 as b\n",
		want:       "base-generic-go:1.0.0",
	}, {
		name:       "no registry prefix",
		dockerfile: "ARG SSEBENCH_REGISTRY\nFROM ${SSEBENCH_REGISTRY}/base-generic-go:1.0.0 AS b\nFROM ubuntu:22.04\n",
		wantErr:    "line 3: the last FROM must be ${SSEBENCH_REGISTRY}/<base image>, not ubuntu:22.04",
	}, {
		name:       "registry not at the start",
		dockerfile: "ARG SSEBENCH_REGISTRY\nFROM docker.io/${SSEBENCH_REGISTRY}/base:1\n",
		wantErr:    "line 2: the last FROM must be ${SSEBENCH_REGISTRY}/<base image>, not docker.io/${SSEBENCH_REGISTRY}/base:1",
	}, {
		name:       "unpinned",
		dockerfile: "ARG SSEBENCH_REGISTRY\n\nFROM ${SSEBENCH_REGISTRY}/base-generic-go\n",
		wantErr:    "line 3: the base image base-generic-go is not pinned: add a version tag (such as :1.0.0) or a digest",
	}, {
		name:       "latest",
		dockerfile: "ARG SSEBENCH_REGISTRY\nFROM ${SSEBENCH_REGISTRY}/base-generic-go:latest\n",
		wantErr:    "line 2: the base image base-generic-go:latest is pinned to latest, which moves: use a version tag (such as :1.0.0) or a digest",
	}, {
		name:       "bad digest",
		dockerfile: "ARG SSEBENCH_REGISTRY\nFROM ${SSEBENCH_REGISTRY}/base@sha256:abc\n",
		wantErr:    `line 2: the base image base@sha256:abc has an invalid digest "sha256:abc" (want sha256:<64 hex digits>)`,
	}, {
		name:       "variable without default",
		dockerfile: "ARG SSEBENCH_REGISTRY\nARG V\nFROM ${SSEBENCH_REGISTRY}/base:${V}\n",
		wantErr:    "line 3: FROM ${SSEBENCH_REGISTRY}/base:${V}: $V has no default value",
	}, {
		name:       "no FROM",
		dockerfile: "ARG SSEBENCH_REGISTRY\n",
		wantErr:    "has no FROM instruction",
	}, {
		name:       "instruction before FROM",
		dockerfile: "RUN true\nFROM ${SSEBENCH_REGISTRY}/base:1\n",
		wantErr:    "line 1: RUN before the first FROM (only ARG may come first)",
	}, {
		name:       "bad FROM",
		dockerfile: "FROM a b\n",
		wantErr:    "line 1: FROM requires either one or three arguments",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Base(strings.NewReader(tt.dockerfile))
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got != tt.want || gotErr != tt.wantErr {
				t.Errorf("Base() = %q, %q; want %q, %q", got, gotErr, tt.want, tt.wantErr)
			}
		})
	}
}

func TestCheckDockerfile(t *testing.T) {
	tests := []struct {
		name       string
		dockerfile string
		want       []string
	}{{
		name:       "valid",
		dockerfile: validDockerfile,
	}, {
		name:       "copy variants",
		dockerfile: "ARG SSEBENCH_REGISTRY\nFROM ${SSEBENCH_REGISTRY}/b:1\nWORKDIR /\nCOPY --chown=0:0 ./sse ssebench\n",
	}, {
		name:       "copy in JSON form, with another source",
		dockerfile: "ARG SSEBENCH_REGISTRY\nFROM ${SSEBENCH_REGISTRY}/b:1\nCOPY [\"extra\", \"sse/\", \"/ssebench\"]\n",
	}, {
		name:       "copy in the stage the final one is built from",
		dockerfile: "ARG SSEBENCH_REGISTRY\nFROM ${SSEBENCH_REGISTRY}/b:1 AS case\nCOPY sse /ssebench\nFROM case\nRUN true\n",
	}, {
		name:       "registry ARG missing",
		dockerfile: "FROM alpine AS x\nARG SSEBENCH_REGISTRY\nFROM ${SSEBENCH_REGISTRY}/b:1\nCOPY sse/ /ssebench/\n",
		want:       []string{"d/Dockerfile:1: ARG SSEBENCH_REGISTRY must be declared before the first FROM"},
	}, {
		name:       "sse not copied",
		dockerfile: "ARG SSEBENCH_REGISTRY\nFROM ${SSEBENCH_REGISTRY}/b:1\nCOPY sse/config.yaml /ssebench/config.yaml\nCOPY sse /elsewhere\n",
		want:       []string{"d/Dockerfile: the final stage must copy sse/ to /ssebench (COPY sse/ /ssebench/)"},
	}, {
		name:       "sse copied from another stage does not count",
		dockerfile: "ARG SSEBENCH_REGISTRY\nFROM alpine AS x\nCOPY sse /ssebench\nFROM ${SSEBENCH_REGISTRY}/b:1\nCOPY --from=x /ssebench /ssebench\n",
		want:       []string{"d/Dockerfile: the final stage must copy sse/ to /ssebench (COPY sse/ /ssebench/)"},
	}, {
		name:       "relative destination under another WORKDIR",
		dockerfile: "ARG SSEBENCH_REGISTRY\nFROM ${SSEBENCH_REGISTRY}/b:1\nWORKDIR /src\nCOPY sse ssebench\n",
		want:       []string{"d/Dockerfile: the final stage must copy sse/ to /ssebench (COPY sse/ /ssebench/)"},
	}, {
		name:       "every problem at once",
		dockerfile: "FROM ubuntu:latest\n",
		want: []string{
			"d/Dockerfile:1: ARG SSEBENCH_REGISTRY must be declared before the first FROM",
			"d/Dockerfile:1: the last FROM must be ${SSEBENCH_REGISTRY}/<base image>, not ubuntu:latest",
			"d/Dockerfile: the final stage must copy sse/ to /ssebench (COPY sse/ /ssebench/)",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ps := CheckDockerfile("d/Dockerfile", strings.NewReader(tt.dockerfile))
			if diff := cmp.Diff(tt.want, problemStrings(ps)); diff != "" {
				t.Errorf("CheckDockerfile() problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckDockerfileParseError(t *testing.T) {
	// An unknown parser directive value is one of the few things
	// BuildKit's parser itself rejects.
	_, ps := CheckDockerfile("d/Dockerfile", strings.NewReader("# escape=xx\nFROM a\n"))
	want := []string{"d/Dockerfile: invalid escape token 'xx' does not match ` or \\"}
	if diff := cmp.Diff(want, problemStrings(ps)); diff != "" {
		t.Errorf("CheckDockerfile(bad directive) problems mismatch (-want +got):\n%s", diff)
	}
}
