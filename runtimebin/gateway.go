package runtimebin

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/42-b3yond-6ug/ssebench/internal/gobuild"
	"github.com/42-b3yond-6ug/ssebench/oci"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The gateway image: the model gateway of a restricted run on a cluster
// (cmd/ssebench-gateway), alone in an image FROM scratch.
const (
	// GatewayPackage is its program, relative to the module root.
	GatewayPackage = "./cmd/ssebench-gateway"
	// Gateway is the program's path in the image.
	Gateway = "/ssebench-gateway"
	// GatewayUID is the user it runs as: no account of the image (it has
	// none), not root.
	GatewayUID = 65532
)

// BuildGateway compiles the gateway for one platform (WithPlatforms' first;
// the options of Build apply) and returns its image: one layer holding
// /ssebench-gateway, USER 65532, ENTRYPOINT the program. The same sources,
// toolchain and options give the same digest. The layer is a spool file
// in the temporary directory, which the caller removes once the image is
// written.
func BuildGateway(ctx context.Context, opts ...BuildOption) (v1.Image, error) {
	o, err := makeBuildOptions(opts...)
	if err != nil {
		return nil, err
	}
	p := o.platforms[0]
	dir, err := os.MkdirTemp(o.tempDir, "gateway-bin-")
	if err != nil {
		return nil, fmt.Errorf("building the gateway: %w", err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "gateway")
	if err := gobuild.Compile(ctx, o.goTool, o.moduleDir, GatewayPackage, bin, p); err != nil {
		return nil, fmt.Errorf("building the gateway for %s: %w", p.String(), err)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		return nil, err
	}
	entry := oci.Entry{
		Header: &tar.Header{Typeflag: tar.TypeReg, Name: Gateway[1:], Mode: 0o755, Size: fi.Size(), ModTime: o.when},
		Open:   func() (io.ReadCloser, error) { return os.Open(bin) },
	}
	l, err := oci.WriteLayer(ctx, o.tempDir, []oci.Entry{entry}, oci.WithCompression(o.compression), oci.WithDefaultTime(o.when))
	if err != nil {
		return nil, fmt.Errorf("writing the gateway layer: %w", err)
	}
	uid := strconv.Itoa(GatewayUID)
	cfg := &v1.ConfigFile{
		Architecture: p.Architecture, OS: p.OS, Variant: p.Variant,
		Created: v1.Time{Time: o.when},
		Config:  v1.Config{Entrypoint: []string{Gateway}, User: uid + ":" + uid},
		RootFS:  v1.RootFS{Type: "layers"},
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, err
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   l,
		History: v1.History{Created: v1.Time{Time: o.when}, CreatedBy: "ssebench gateway", Comment: "ssebench model gateway"},
	})
	if err == nil {
		_, err = img.Digest()
	}
	if err != nil {
		if s, ok := l.(*oci.SpooledLayer); ok {
			_ = s.Remove()
		}
		return nil, fmt.Errorf("assembling the gateway image: %w", err)
	}
	return img, nil
}
