package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// manifestPath matches the path of a manifest request.
var manifestPath = regexp.MustCompile(`^/v2/.+/manifests/[^/]+$`)

// manifestCheck bounds and checks every manifest a registry sends, as it
// is read (nothing is held beyond what the reader holds):
//
//   - a manifest larger than store.MaxManifestSize, the cap of every
//     manifest ssebench reads, is refused, by its Content-Length before a
//     byte is read, or once that many bytes came. go-containerregistry
//     alone reads up to 100 MiB, and a 90 MB manifest took 659 MB to
//     parse;
//   - a manifest whose bytes do not have the digest the registry announced
//     for them (Docker-Content-Digest) fails at its end. go-containerregistry
//     checks a manifest fetched by digest, not one fetched by tag: one
//     flipped byte in transit would otherwise be stored under the tag,
//     built into an image and mirrored.
type manifestCheck struct{ base http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (m manifestCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := m.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK || !manifestPath.MatchString(req.URL.Path) {
		return resp, err
	}
	what := req.URL.Host + req.URL.Path
	if resp.ContentLength > store.MaxManifestSize {
		resp.Body.Close()
		return nil, permanent(tooLarge(what, resp.ContentLength))
	}
	b := &checkedManifest{rc: resp.Body, what: what}
	if hx, ok := strings.CutPrefix(resp.Header.Get("Docker-Content-Digest"), "sha256:"); ok {
		b.want, b.h = hx, sha256.New()
	}
	resp.Body = b
	return resp, nil
}

func tooLarge(what string, n int64) error {
	return fmt.Errorf("the manifest %s is %s or more, more than the %s any image needs; refused", what, units.Bytes(n), units.Bytes(store.MaxManifestSize))
}

// checkedManifest is a manifest's body, bounded and hashed as it is read.
type checkedManifest struct {
	rc   io.ReadCloser
	what string
	n    int64
	h    hash.Hash // nil when the registry announced no digest
	want string
	err  error // the error every Read returns once the body failed
}

func (b *checkedManifest) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	if b.n > store.MaxManifestSize {
		b.err = permanent(tooLarge(b.what, b.n))
		return 0, b.err
	}
	if b.h != nil {
		b.h.Write(p[:n])
	}
	if err == io.EOF && b.h != nil {
		if got := hex.EncodeToString(b.h.Sum(nil)); got != b.want {
			b.err = fmt.Errorf("the manifest from %s has digest sha256:%s, not the sha256:%s the registry announced: it was damaged on the way; try again", b.what, got, b.want)
			return n, b.err
		}
	}
	return n, err
}

func (b *checkedManifest) Close() error { return b.rc.Close() }
