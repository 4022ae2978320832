package remote

// The distribution protocol for manifests: PUT of a manifest (children of
// an index first, see push.go), and reading a registry's refusal of a
// manifest whose blobs it lacks.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// putManifest writes raw, of media type mt, at ref (a tag or a digest).
func (p *pusher) putManifest(ctx context.Context, ref name.Reference, raw []byte, mt types.MediaType) error {
	c, err := p.client(ctx, ref.Context())
	if err != nil {
		return err
	}
	r := ref.Context()
	u := fmt.Sprintf("%s://%s/v2/%s/manifests/%s", r.Scheme(), r.RegistryStr(), r.RepositoryStr(), ref.Identifier())
	err = p.retry(ctx, func() error {
		resp, err := p.do(ctx, c, http.MethodPut, u, bytes.NewReader(raw), int64(len(raw)), http.Header{"Content-Type": {string(mt)}}, http.StatusCreated, http.StatusOK, http.StatusAccepted)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing the manifest of %s: %w", ref.Name(), err)
	}
	return nil
}

// blobUnknown says whether err is a registry refusing a manifest because
// a blob it names is missing.
func blobUnknown(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	for _, d := range te.Errors {
		if d.Code == transport.ManifestBlobUnknownErrorCode || d.Code == transport.BlobUnknownErrorCode {
			return true
		}
	}
	return false
}

func mediaTypeOf(content remote.Taggable, raw []byte) (types.MediaType, error) {
	if w, ok := content.(interface {
		MediaType() (types.MediaType, error)
	}); ok {
		if mt, err := w.MediaType(); err == nil && mt != "" {
			return mt, nil
		}
	}
	if d, err := partial.Descriptor(content.(partial.Describable)); err == nil && d.MediaType != "" {
		return d.MediaType, nil
	}
	var m struct {
		MediaType types.MediaType `json:"mediaType"`
	}
	_ = json.Unmarshal(raw, &m)
	if m.MediaType == "" {
		return "", errors.New("the manifest names no media type")
	}
	return m.MediaType, nil
}
