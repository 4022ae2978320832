// Package trust decides whether what a registry says may be believed
// (SPEC.md section 16). The local store's own records are trusted; from a
// registry, a tool image offered for reuse or a layer-facts artifact is
// trusted when the registry is one the user named as trusted, or when a
// signature next to it verifies with the user's public key. Anything else
// is recomputed from the layers themselves.
//
// Signatures follow cosign's simple-signing layout, so that cosign can
// verify them too (`cosign verify --key KEY --insecure-ignore-tlog`): an
// image tagged "sha256-<hex>.sig" in the signed image's repository, whose
// one layer (media type application/vnd.dev.cosign.simplesigning.v1+json)
// is the payload naming the signed manifest digest, and whose layer
// annotation dev.cosignproject.cosign/signature is the base64 ECDSA P-256
// signature of the payload's SHA-256. Keys are PEM files (PKIX public key,
// PKCS #8 private key); verification is offline: no transparency log.
package trust

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// PayloadType is the media type of a signature's payload layer.
	PayloadType = types.MediaType("application/vnd.dev.cosign.simplesigning.v1+json")
	// SignatureAnnotation carries the base64 signature on that layer.
	SignatureAnnotation = "dev.cosignproject.cosign/signature"
	// payloadKind is the payload's critical.type.
	payloadKind = "cosign container image signature"
	// maxPayload bounds a signature payload read into memory.
	maxPayload = 64 << 10
)

// Policy says what to believe. The zero Policy trusts no registry.
type Policy struct {
	// Registries are hosts (host or host:port) whose content is trusted
	// as it is, as the store's own records are.
	Registries []string
	// Key verifies signatures; nil accepts none.
	Key *ecdsa.PublicKey
	// Signer signs what this machine publishes; nil signs nothing.
	Signer *ecdsa.PrivateKey
}

// Enabled reports whether p could trust anything from a registry.
func (p *Policy) Enabled() bool {
	return p != nil && (len(p.Registries) > 0 || p.Key != nil)
}

// TrustsRegistry reports whether host is named trusted.
func (p *Policy) TrustsRegistry(host string) bool {
	if p == nil {
		return false
	}
	host = strings.ToLower(host)
	bare := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		bare = h
	}
	for _, r := range p.Registries {
		r = strings.ToLower(strings.TrimSpace(r))
		if r == host || (!strings.Contains(r, ":") && r == bare) {
			return true
		}
	}
	return false
}

// Check says whether the manifest d in repo may be believed: its registry
// is trusted, or a signature of d in repo verifies with p.Key. The error
// says why not, for the warning the caller prints.
func (p *Policy) Check(ctx context.Context, repo name.Repository, d v1.Hash, opts ...remote.Option) error {
	if p.TrustsRegistry(repo.RegistryStr()) {
		return nil
	}
	if p == nil || p.Key == nil {
		// The flag with its value: the flows of a registry end here, and
		// the user should not have to look up what it takes.
		return fmt.Errorf("%s is not a trusted registry and no verification key is set (--trust-registry or --verify-key): pass --trust-registry %s if whoever can push there is trusted (or set SSEBENCH_TRUSTED_REGISTRIES), or --verify-key with the public key its publisher signs with", repo.RegistryStr(), repo.RegistryStr())
	}
	return verify(ctx, p.Key, repo, d, opts...)
}

// SignatureTag is where the signature of d lives in repo.
func SignatureTag(repo name.Repository, d v1.Hash) name.Tag {
	return repo.Tag(fmt.Sprintf("%s-%s.sig", d.Algorithm, d.Hex))
}

type payload struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
	Optional map[string]string `json:"optional"`
}

// verify looks for a signature of d in repo that key verifies. ctx bounds
// every request, the signature's layer read included: remote.Image keeps it
// for the lazy reads.
func verify(ctx context.Context, key *ecdsa.PublicKey, repo name.Repository, d v1.Hash, opts ...remote.Option) error {
	img, err := remote.Image(SignatureTag(repo, d), append(opts, remote.WithContext(ctx))...)
	if err != nil {
		return fmt.Errorf("no signature of %s in %s: %w", d, repo, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return fmt.Errorf("reading the signature of %s: %w", d, err)
	}
	for _, ld := range m.Layers {
		if ld.MediaType != PayloadType || ld.Size > maxPayload {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(ld.Annotations[SignatureAnnotation])
		if err != nil || len(sig) == 0 {
			continue
		}
		l, err := img.LayerByDigest(ld.Digest)
		if err != nil {
			continue
		}
		rc, err := l.Compressed()
		if err != nil {
			continue
		}
		body, err := io.ReadAll(io.LimitReader(rc, maxPayload+1))
		rc.Close()
		if err != nil || int64(len(body)) != ld.Size {
			continue
		}
		sum := sha256.Sum256(body)
		if !ecdsa.VerifyASN1(key, sum[:], sig) {
			continue
		}
		var pl payload
		if json.Unmarshal(body, &pl) != nil || pl.Critical.Type != payloadKind || pl.Critical.Image.DockerManifestDigest != d.String() {
			continue
		}
		return nil
	}
	return fmt.Errorf("no signature of %s in %s verifies with the key", d, repo)
}

// Sign publishes a signature of the manifest d of repo (see the package
// doc). It does nothing when p has no Signer.
func (p *Policy) Sign(ctx context.Context, repo name.Repository, d v1.Hash, opts ...remote.Option) error {
	if p == nil || p.Signer == nil {
		return nil
	}
	var pl payload
	pl.Critical.Identity.DockerReference = repo.Name()
	pl.Critical.Image.DockerManifestDigest = d.String()
	pl.Critical.Type = payloadKind
	body, err := json.Marshal(pl)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	sig, err := ecdsa.SignASN1(rand.Reader, p.Signer, sum[:])
	if err != nil {
		return fmt.Errorf("signing %s: %w", d, err)
	}
	l := static.NewLayer(body, PayloadType)
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: l, Annotations: map[string]string{SignatureAnnotation: base64.StdEncoding.EncodeToString(sig)}})
	if err != nil {
		return err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if err := remote.Write(SignatureTag(repo, d), img, append(opts, remote.WithContext(ctx))...); err != nil {
		return fmt.Errorf("publishing the signature of %s: %w", d, err)
	}
	return nil
}

// LoadPublicKey reads a PEM public key (ECDSA P-256, as `cosign
// generate-key-pair` writes cosign.pub).
func LoadPublicKey(path string) (*ecdsa.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the verification key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("%s is not a PEM file: give the public key (-----BEGIN PUBLIC KEY-----)", path)
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ek, ok := k.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%s is not an ECDSA public key: ssebench verifies ECDSA P-256 signatures", path)
	}
	return ek, nil
}

// LoadPrivateKey reads a PEM private key (PKCS #8 or SEC 1, ECDSA P-256,
// unencrypted).
func LoadPrivateKey(path string) (*ecdsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the signing key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("%s is not a PEM file: give an unencrypted private key", path)
	}
	if k, err := x509.ParseECPrivateKey(blk.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New(path + " is not an ECDSA private key: ssebench signs with ECDSA P-256")
	}
	return ek, nil
}

// EncodeKeys returns k and its public half as PEM, for tests and for
// `ssebench trust keygen`-like tooling.
func EncodeKeys(k *ecdsa.PrivateKey) (private, public []byte, err error) {
	pk, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	var a, b bytes.Buffer
	pem.Encode(&a, &pem.Block{Type: "PRIVATE KEY", Bytes: pk})
	pem.Encode(&b, &pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	return a.Bytes(), b.Bytes(), nil
}
