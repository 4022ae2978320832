package agentimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// blindPaths are what an agent's build and its container must not see of
// the tool image: the task's answers (reference patch, hidden tests, PoCs,
// config) with the runtime's private programs under /ssebench, the
// pristine repository, and the sidecar's private programs. The blind
// image removes them with whiteouts.
var blindPaths = []string{contract.TaskRoot, contract.RepoDir, contract.SidecarMCPDir}

// emptiedPaths are directories the blind image keeps, root's and 0700,
// but empty (an opaque whiteout): the runtime's state, whose directory
// must stay root-only in the agent container, since the run's results are
// mounted below it.
var emptiedPaths = []string{contract.StateDir}

// blindComment marks the history entry of the whiteout layer.
const blindComment = "ssebench.agentimage.blind.v0"

// Blind returns the image an agent's Dockerfile is built on: tool with one
// more layer that removes blindPaths. It has the tool image's accounts,
// toolchain, SOURCE_DIR and config, and none of the task's answers, so
// that neither a RUN nor a COPY can read them. The layer is the same for
// the same tool image (its times are the tool image's creation time).
func Blind(tool v1.Image) (v1.Image, error) {
	cf, err := tool.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of the tool image: %w", err)
	}
	when := defaultTime(cf)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	var hdrs []*tar.Header
	for _, p := range blindPaths {
		dir, base := path.Split(strings.TrimPrefix(p, "/"))
		hdrs = append(hdrs, &tar.Header{Typeflag: tar.TypeReg, Name: dir + ".wh." + base, Mode: 0o644, ModTime: when, Format: tar.FormatPAX})
	}
	for _, p := range emptiedPaths {
		d := strings.TrimPrefix(p, "/") + "/"
		hdrs = append(hdrs,
			&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: contract.PrivateMode, ModTime: when, Format: tar.FormatPAX},
			&tar.Header{Typeflag: tar.TypeReg, Name: d + ".wh..wh..opq", Mode: 0o644, ModTime: when, Format: tar.FormatPAX})
	}
	// Sorted, as every layer of ours: the same bytes everywhere.
	slices.SortFunc(hdrs, func(a, b *tar.Header) int { return strings.Compare(a.Name, b.Name) })
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	mt := types.DockerLayer
	if m, err := tool.MediaType(); err == nil && m == types.OCIManifestSchema1 {
		mt = types.OCILayer
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(mt))
	if err != nil {
		return nil, fmt.Errorf("making the blind layer: %w", err)
	}
	img, err := mutate.Append(tool, mutate.Addendum{Layer: l, History: v1.History{
		Created: v1.Time{Time: when}, CreatedBy: "ssebench: hide " + strings.Join(append(slices.Clone(blindPaths), emptiedPaths...), " ") + " from the agent's build and container", Comment: blindComment,
	}})
	if err != nil {
		return nil, fmt.Errorf("making the blind image: %w", err)
	}
	// The config's creation time stays the tool image's, so that the
	// build's default time (DefaultTime) is the same.
	ncf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	ncf = ncf.DeepCopy()
	ncf.Created = cf.Created
	return mutate.ConfigFile(img, ncf)
}

// ErrNotOnBase marks an agent image whose first layers are not those of
// the image it was built on (the blind image, or for verify the tool
// image): its agent layers cannot be told apart. Match it with errors.Is.
var ErrNotOnBase = errors.New("the agent image does not start with the layers of the image it is built on")
