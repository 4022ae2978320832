package assemble

import (
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/42-b3yond-6ug/ssebench/oci"
)

// MaxLayers bounds the layers of a tool image: overlayfs stacks at most
// about 500 lower directories (containerd's snapshotter gives up beyond),
// so an image with more is one no runtime mounts.
const MaxLayers = 500

// MaxConfigSize bounds an image config, which is read whole: a config with
// a long history is a few hundred KiB.
const MaxConfigSize = 8 << 20

// toolOwnLayers is how many layers Tool adds besides the runtime's: system,
// repo, source and (at most) the seal.
const toolOwnLayers = 4

var (
	knownManifests = map[types.MediaType]bool{types.OCIManifestSchema1: true, types.DockerManifestSchema2: true}
	knownConfigs   = map[types.MediaType]bool{types.OCIConfigJSON: true, types.DockerConfigJSON: true}
	knownLayers    = map[types.MediaType]bool{
		types.OCILayer: true, types.OCILayerZStd: true, types.OCIUncompressedLayer: true,
		types.DockerLayer: true, types.DockerUncompressedLayer: true,
	}
)

// checkMetadata refuses an image whose metadata would make a broken tool
// image: an unknown manifest, config or layer media type (a foreign or
// non-distributable layer included), or a config whose diff_ids do not
// count the layers. It returns the config's diff_ids. what names the image
// in messages ("the case image x").
func checkMetadata(img v1.Image, what string) ([]v1.Hash, error) {
	mt, err := img.MediaType()
	if err != nil {
		return nil, fmt.Errorf("reading the media type of %s: %w", what, err)
	}
	if !knownManifests[mt] {
		return nil, fmt.Errorf("%s has manifest media type %q, not an OCI or Docker image manifest: rebuild or re-pull it", what, mt)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of %s: %w", what, err)
	}
	if m.MediaType != "" && m.MediaType != mt {
		return nil, fmt.Errorf("%s says its manifest is %q but was served as %q: rebuild or re-pull it", what, m.MediaType, mt)
	}
	if m.Config.Size > MaxConfigSize {
		return nil, fmt.Errorf("%s has a config of %d bytes, more than the %d an image config needs: rebuild it", what, m.Config.Size, MaxConfigSize)
	}
	if !knownConfigs[m.Config.MediaType] {
		return nil, fmt.Errorf("%s has config media type %q, not an image config: rebuild or re-pull it", what, m.Config.MediaType)
	}
	for i, l := range m.Layers {
		if !knownLayers[l.MediaType] {
			return nil, fmt.Errorf("%s: layer %d (%s) has media type %q, which no tool image may carry: rebuild the image with ordinary tar layers", what, i, l.Digest, l.MediaType)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of %s: %w", what, err)
	}
	if n := len(cf.RootFS.DiffIDs); n != len(m.Layers) {
		return nil, fmt.Errorf("%s has %d layers but its config lists %d diff_ids: rebuild or re-pull it", what, len(m.Layers), n)
	}
	return cf.RootFS.DiffIDs, nil
}

// checkDiffIDs compares what indexing read with the config's diff_ids. An
// index made before diff_ids were recorded is not checked.
func checkDiffIDs(what string, layers []v1.Layer, diffIDs []v1.Hash, idxs []*oci.LayerIndex) error {
	for i, idx := range idxs {
		if idx == nil || idx.DiffID == "" || i >= len(diffIDs) {
			continue
		}
		if idx.DiffID != diffIDs[i].String() {
			d, _ := layers[i].Digest()
			return fmt.Errorf("%s: layer %d (%s) unpacks to %s, but the config's diff_id says %s: the image is damaged: rebuild or re-pull it", what, i, d, idx.DiffID, diffIDs[i])
		}
	}
	return nil
}

// checkPlatforms refuses a runtime image of another platform than the case
// image: the tool image would mix binaries of two architectures.
func checkPlatforms(caseCF, rtCF *v1.ConfigFile, caseWhat, rtWhat string) error {
	c := v1.Platform{OS: caseCF.OS, Architecture: caseCF.Architecture, Variant: caseCF.Variant}
	r := v1.Platform{OS: rtCF.OS, Architecture: rtCF.Architecture, Variant: rtCF.Variant}
	if c.Architecture == "" || r.Architecture == "" {
		return nil // an image that does not say (made by hand, FROM scratch)
	}
	if c.OS != r.OS || c.Architecture != r.Architecture || (variant(c) != variant(r) && variant(c) != "" && variant(r) != "") {
		return fmt.Errorf("%s is for %s but %s is for %s: pick the runtime's %s image (--platform %s)", rtWhat, r.String(), caseWhat, c.String(), c.String(), c.String())
	}
	return nil
}

// variant is p's variant, with arm64's default spelled out (v8), as
// containerd's platform matcher reads it.
func variant(p v1.Platform) string {
	if p.Architecture == "arm64" && p.Variant == "" {
		return "v8"
	}
	return p.Variant
}
