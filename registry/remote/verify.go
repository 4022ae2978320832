package remote

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// maxManifestBody bounds what the manifest check reads into memory; a
// larger answer is left to the caller's own limits.
const maxManifestBody = 8 << 20

// manifestPath matches the path of a manifest request.
var manifestPath = regexp.MustCompile(`^/v2/.+/manifests/[^/]+$`)

// manifestCheck refuses a manifest whose bytes do not have the digest the
// registry announced for them (Docker-Content-Digest). go-containerregistry
// checks a manifest fetched by digest, not one fetched by tag: one flipped
// byte in transit would otherwise be stored under the tag, built into an
// image and mirrored.
type manifestCheck struct{ base http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (m manifestCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := m.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK || !manifestPath.MatchString(req.URL.Path) {
		return resp, err
	}
	want := resp.Header.Get("Docker-Content-Digest")
	hx, ok := strings.CutPrefix(want, "sha256:")
	if !ok || resp.ContentLength > maxManifestBody {
		return resp, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxManifestBody+1))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the manifest %s: %w", req.URL.Redacted(), err)
	}
	if len(b) <= maxManifestBody {
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != hx {
			return nil, fmt.Errorf("the manifest from %s has digest sha256:%s, not the %s the registry announced: it was damaged on the way; try again", req.URL.Host+req.URL.Path, got, want)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}
