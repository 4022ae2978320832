// Command pause is the sandbox ("pause") container of the test cluster that
// scripts/k8s-up.sh starts: it holds a pod's namespaces, reaps the orphans
// that end up its children, and exits on SIGTERM or SIGINT. The cluster has
// no access to a public registry, so its image is made here and pushed to
// the local one:
//
//	go run ./tools/pause --push 127.0.0.1:5000/ssebench/k8s/pause:1
//
// builds this program statically into an image FROM scratch at /pause and
// pushes it (plain HTTP for a loopback registry); the digest goes to stdout.
// With --binary PATH it packages that static binary instead, at
// /<its name>, as its entrypoint (the cluster's NetworkPolicy agent). The
// image is deterministic: the same binary gives the same digest.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	push := flag.String("push", "", "build the pause image and push it to this reference")
	binary := flag.String("binary", "", "with --push: package this static binary instead of pause")
	flag.Parse()
	if *push == "" {
		pause()
		return
	}
	// The push is the only I/O: Ctrl-C or SIGTERM stops it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := build(ctx, *push, *binary); err != nil {
		fmt.Fprintln(os.Stderr, "pause:", err)
		os.Exit(1)
	}
}

// pause waits for SIGTERM or SIGINT, reaping children meanwhile.
func pause() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}

// build compiles this program statically (or takes bin) and pushes the
// image.
func build(ctx context.Context, ref, bin string) error {
	user := "65535:65535"
	if bin == "" {
		tmp, err := os.MkdirTemp("", "pause-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		bin = filepath.Join(tmp, "pause")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./tools/pause")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building the pause binary: %w", err)
		}
	} else {
		user = "0:0"
	}
	base := filepath.Base(bin)
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: base, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	tw.Write(data)
	tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: runtime.GOARCH, OS: "linux",
		Config: v1.Config{Entrypoint: []string{"/" + base}, User: user},
		RootFS: v1.RootFS{Type: "layers", DiffIDs: mustDiffIDs(layer)},
	})
	if err != nil {
		return err
	}
	var opts []name.Option
	if host, _, _ := net.SplitHostPort(refHost(ref)); host == "127.0.0.1" || host == "localhost" {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return err
	}
	if err := remote.Write(r, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Println(d)
	return nil
}

func refHost(ref string) string {
	for i, c := range ref {
		if c == '/' {
			return ref[:i]
		}
	}
	return ref
}

func mustDiffIDs(l v1.Layer) []v1.Hash {
	d, err := l.DiffID()
	if err != nil {
		panic(err)
	}
	return []v1.Hash{d}
}
