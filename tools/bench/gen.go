package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// genVersion changes whenever the generated case or runtime contexts change,
// so that a cached case image of an older generator is not reused.
const genVersion = "1"

// toolchainPackages are installed from apt into the case image: a C/C++
// toolchain of about 300 MB, like a generic-c base image.
const toolchainPackages = "ca-certificates cmake g++ gcc gdb git libc6-dev make patch pkg-config"

// caseDockerfile is the benchmark's case image: the OS image, the toolchain,
// a uid-1000 user as in many upstream images, a world-writable GOPATH, the
// generated project and the task files.
const caseDockerfile = `ARG OS_IMAGE
FROM ${OS_IMAGE}
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends ` + toolchainPackages + ` \
 && rm -rf /var/lib/apt/lists/*
ENV GOPATH=/go
RUN useradd -u 1000 -m -s /bin/bash ubuntu \
 && mkdir -p /go/pkg/mod /go/bin && chmod -R 0777 /go
COPY src/ /src/proj/
COPY config.yaml /ssebench/config.yaml
`

const caseConfig = `id: bench-1-0000000
project: bench
repository: https://example.invalid/bench
language: c
source: /src/proj
task_description:
  bug_description: the benchmark's case
scripts:
  build: build.sh
  run: run.sh
  test: test.sh
files:
  patch: fix.diff
`

// genKey names the generated case context, for the case image's tag.
func genKey(files, mb int, osImage string) string {
	h := sha256.New()
	fmt.Fprintf(h, "gen %s\nfiles %d\nmb %d\nos %s\n%s\n%s", genVersion, files, mb, osImage, caseDockerfile, caseConfig)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// words are what the generated text files are made of: text compresses
// about as well as source code does.
var words = []string{"func", "return", "if", "else", "for", "range", "struct", "int", "string", "error",
	"nil", "err", "ctx", "buf", "len", "make", "append", "var", "const", "type", "package", "import",
	"{", "}", "(", ")", ":=", "=", "==", "!=", "&&", "||", "//", "value", "index", "node", "tree", "layer"}

// writeCaseContext writes the case image's build context into dir: the
// Dockerfile, config.yaml and a project of `files` files totalling about
// `mb` MB, the same bytes on every run. Most files are small text files;
// a few large binary ones make up the size, as vendored archives and test
// data do in real projects. A .gitignore leaves out build/ and *.o.
func writeCaseContext(dir string, files, mb int) error {
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(caseDockerfile), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(caseConfig), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "src", ".gitignore"), []byte("build/\n*.o\n"), 0o644); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(42, 1))
	total := int64(mb) << 20
	nbin := files / 20
	ntext := files - nbin
	var written int64
	for i := 0; i < ntext; i++ {
		name := fmt.Sprintf("src/pkg%03d/file%05d.c", i%100, i)
		if i%50 == 0 {
			name = fmt.Sprintf("src/build/obj%03d/file%05d.o", i%100, i)
		}
		size := 1024 + rng.Int64N(16<<10)
		if err := writeText(filepath.Join(dir, name), size, rng); err != nil {
			return err
		}
		written += size
	}
	per := (total - written) / int64(nbin)
	if per < 4096 {
		per = 4096
	}
	for i := 0; i < nbin; i++ {
		name := fmt.Sprintf("src/testdata/d%02d/blob%05d.bin", i%20, i)
		if err := writeRandom(filepath.Join(dir, name), per/2+rng.Int64N(per), rng); err != nil {
			return err
		}
	}
	return nil
}

func create(p string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	return os.Create(p)
}

func writeText(p string, size int64, rng *rand.Rand) error {
	f, err := create(p)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	var n int64
	for n < size {
		word := words[rng.IntN(len(words))]
		sep := " "
		if rng.IntN(8) == 0 {
			sep = "\n"
		}
		m, _ := w.WriteString(word + sep)
		n += int64(m)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeRandom(p string, size int64, rng *rand.Rand) error {
	f, err := create(p)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, rngReader{rng}, size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type rngReader struct{ r *rand.Rand }

func (r rngReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.r.Uint32())
	}
	return len(p), nil
}

// writeRuntimeContext writes a runtime image's build context: FROM scratch
// with an entrypoint and a daemon the size of static binaries. Variants
// differ in the daemon only (one changed file).
func writeRuntimeContext(dir string, variant uint64) error {
	df := "FROM scratch\nCOPY rootfs/ /\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		return err
	}
	for _, f := range []struct {
		path string
		seed uint64
		size int64
	}{
		{"rootfs/usr/local/bin/entrypoint", 7, 8 << 20},
		{"rootfs/ssebench/ssebench-daemon", 100 + variant, 12 << 20},
	} {
		p := filepath.Join(dir, f.path)
		if err := writeRandom(p, f.size, rand.New(rand.NewPCG(f.seed, 2))); err != nil {
			return err
		}
		if err := os.Chmod(p, 0o755); err != nil {
			return err
		}
	}
	return nil
}
