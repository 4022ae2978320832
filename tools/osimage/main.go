// Command osimage turns a root filesystem tarball (as made by mmdebstrap) into
// a single-layer OCI image and pushes it to a registry.
//
// scripts/setup.sh uses it to publish the Debian OS image that the base
// image Dockerfiles start FROM, so that development machines and CI never
// need an image from a public registry. The output is deterministic: the same
// tarball, architecture and creation time always give the same digest.
//
// Usage:
//
//	go run ./tools/osimage -rootfs rootfs.tar -ref 127.0.0.1:5000/ssebench/os/debian:bookworm
//
// The image digest is printed on stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// defaultPath is the PATH of Debian's official container images, so that
// RUN steps in Dockerfiles behave as they would on top of debian:bookworm.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

type options struct {
	rootfs   string
	ref      string
	arch     string
	variant  string
	created  time.Time
	insecure bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "osimage:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	img, err := build(o)
	if err != nil {
		return err
	}
	var nameOpts []name.Option
	if o.insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	ref, err := name.ParseReference(o.ref, nameOpts...)
	if err != nil {
		return fmt.Errorf("parsing image reference %q: %w", o.ref, err)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return fmt.Errorf("computing image digest: %w", err)
	}
	fmt.Println(d.String())
	return nil
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("osimage", flag.ContinueOnError)
	var o options
	var created string
	fs.StringVar(&o.rootfs, "rootfs", "", "root filesystem tarball (uncompressed or gzip); required")
	fs.StringVar(&o.ref, "ref", "", "image reference to push to, e.g. 127.0.0.1:5000/ssebench/os/debian:bookworm; required")
	fs.StringVar(&o.arch, "arch", runtime.GOARCH, "image architecture (GOARCH spelling)")
	fs.StringVar(&o.variant, "variant", "", "image architecture variant, e.g. v8 for arm64")
	fs.StringVar(&created, "created", os.Getenv("SOURCE_DATE_EPOCH"), "creation time as Unix seconds (default $SOURCE_DATE_EPOCH, else 0)")
	fs.BoolVar(&o.insecure, "insecure", false, "allow plain HTTP for registries other than localhost and 127.0.0.1 (those always may use it)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() != 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.rootfs == "" || o.ref == "" {
		return o, errors.New("both -rootfs and -ref are required")
	}
	secs := int64(0)
	if created != "" {
		var err error
		if secs, err = strconv.ParseInt(created, 10, 64); err != nil {
			return o, fmt.Errorf("parsing -created %q as Unix seconds: %w", created, err)
		}
	}
	o.created = time.Unix(secs, 0).UTC()
	return o, nil
}

// build assembles the image lazily; nothing is read until it is written.
func build(o options) (v1.Image, error) {
	if _, err := os.Stat(o.rootfs); err != nil {
		return nil, fmt.Errorf("reading root filesystem: %w", err)
	}
	layer, err := tarball.LayerFromFile(o.rootfs, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("reading root filesystem %q: %w", o.rootfs, err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	created := v1.Time{Time: o.created}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   created,
			CreatedBy: "mmdebstrap rootfs (ssebench tools/osimage)",
			Comment:   "single layer root filesystem",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("appending root filesystem layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading image config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS = "linux"
	cfg.Architecture = o.arch
	cfg.Variant = o.variant
	cfg.Created = created
	cfg.Config.Env = []string{"PATH=" + defaultPath}
	cfg.Config.Cmd = []string{"bash"}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("setting image config: %w", err)
	}
	return img, nil
}
