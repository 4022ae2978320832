package assemble

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"

	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/registry/trust"
)

// Media types of a layer-facts artifact: a small image whose one layer is
// the gzipped JSON of what a case layer teaches (its index and small files).
const (
	FactsArtifactType = "application/vnd.ssebench.layer-facts.v1"
	factsConfigType   = types.MediaType("application/vnd.ssebench.layer-facts.config.v1+json")
	factsLayerType    = types.MediaType("application/vnd.ssebench.layer-facts.v1+json+gzip")
)

// remoteFacts shares layer facts through a registry repository, one
// artifact per layer digest, tagged "sha256-<hex>.facts-v<format>": a
// fresh machine (CI with an empty cache) fetches a few hundred kilobytes
// instead of decompressing a base layer that was analysed before.
type remoteFacts struct {
	repo    name.Repository
	opts    []remote.Option
	publish bool
	policy  *trust.Policy
	// refused counts artifacts found but not believed (see trust).
	refused atomic.Int64
}

// WithRemote makes f fetch the facts of a layer it has not seen from repo
// (e.g. localhost:5000/ssebench/layer-facts) before reading the layer, and,
// with publish, push (and, with policy's signer, sign) what it learns from
// layers it had to read. Facts are what the tool image's accounts and modes
// are computed from, so a fetched artifact is used only when policy trusts
// it (a trusted registry, or a signature that policy's key verifies);
// without such a policy nothing is fetched. opts reach the registry (auth,
// transport). A registry that cannot be reached, lacks an artifact or is
// not believed only costs the layer read it would have cost anyway.
func (f *Facts) WithRemote(repo name.Repository, publish bool, policy *trust.Policy, opts ...remote.Option) error {
	if f == nil {
		return fmt.Errorf("layer facts from %s need a local facts cache", repo)
	}
	f.remote = &remoteFacts{repo: repo, opts: opts, publish: publish, policy: policy}
	return nil
}

// Refused returns how many layers' facts were in the registry but not
// believed (unsigned, or signed with another key, from an untrusted
// registry).
func (f *Facts) Refused() int {
	if f == nil || f.remote == nil {
		return 0
	}
	return int(f.remote.refused.Load())
}

// Fetched returns how many layers' facts came from the registry.
func (f *Facts) Fetched() int {
	if f == nil {
		return 0
	}
	return int(f.fetched.Load())
}

func (r *remoteFacts) tag(d v1.Hash) name.Tag {
	return r.repo.Tag(fmt.Sprintf("%s-%s.facts-v%d", d.Algorithm, d.Hex, oci.IndexFormat))
}

// fetch returns the facts of layer d, or false.
func (r *remoteFacts) fetch(d v1.Hash) (*layerFacts, bool) {
	if !r.policy.Enabled() {
		return nil, false
	}
	img, err := remote.Image(r.tag(d), r.opts...)
	if err != nil {
		return nil, false
	}
	md, err := img.Digest()
	if err != nil {
		return nil, false
	}
	if err := r.policy.Check(context.Background(), r.repo, md, r.opts...); err != nil {
		r.refused.Add(1)
		return nil, false
	}
	ls, err := img.Layers()
	if err != nil || len(ls) != 1 {
		return nil, false
	}
	// The blob is the gzipped JSON, read as it is stored (remote checks
	// it against its digest) and gunzipped here.
	rc, err := ls[0].Compressed()
	if err != nil {
		return nil, false
	}
	defer rc.Close()
	var lf layerFacts
	zr, err := gzip.NewReader(rc)
	if err != nil {
		return nil, false
	}
	if err := json.NewDecoder(io.LimitReader(zr, maxFactsSize)).Decode(&lf); err != nil {
		return nil, false
	}
	// Facts of another layer, or of another format, are no facts: Merge
	// re-checks every entry anyway.
	if lf.Index == nil || lf.Index.Format != oci.IndexFormat || lf.Index.Digest != d.String() {
		return nil, false
	}
	return &lf, true
}

// maxFactsSize bounds a fetched artifact once decompressed.
const maxFactsSize = 256 << 20

// push publishes the facts of layer d; failures are ignored, as a later
// run only pays a layer read for them.
func (r *remoteFacts) push(d v1.Hash, idx *oci.LayerIndex, files map[string][]byte) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return
	}
	if err := writeLayerFacts(zw, idx, files); err != nil {
		return
	}
	if err := zw.Close(); err != nil {
		return
	}
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(buf.Bytes(), factsLayerType))
	if err != nil {
		return
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, factsConfigType)
	img = mutate.Annotations(img, map[string]string{
		"dev.ssebench.layer": d.String(),
	}).(v1.Image)
	if remote.Write(r.tag(d), img, r.opts...) != nil {
		return
	}
	if md, err := img.Digest(); err == nil {
		_ = r.policy.Sign(context.Background(), r.repo, md, r.opts...)
	}
}

// writeLayerFacts writes the JSON of layerFacts{idx, files}, the index an
// entry at a time (oci.LayerIndex.WriteJSON): json.Encoder built the
// whole index in memory and then compacted a copy of it, a tenth of a
// second of a cold assembly's CPU and twice the document's size in memory.
func writeLayerFacts(w io.Writer, idx *oci.LayerIndex, files map[string][]byte) error {
	if _, err := io.WriteString(w, `{"index":`); err != nil {
		return err
	}
	if err := idx.WriteJSON(w); err != nil {
		return err
	}
	if len(files) > 0 {
		enc := make(map[string]string, len(files))
		for k, v := range files {
			enc[k] = base64.StdEncoding.EncodeToString(v)
		}
		b, err := json.Marshal(enc)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, `,"files":%s`, b); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "}\n")
	return err
}
