package trust

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func TestSignAndCheck(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	repo, err := name.NewRepository(host+"/ssebench/tool/x", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, _ := random.Image(100, 1)
	if err := remote.Write(repo.Tag("1.0.0"), img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	ci, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	forger, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)

	var none *Policy
	if err := none.Check(ctx, repo, d); err == nil {
		t.Error("no policy trusted an unsigned image")
	} else if want := "pass --trust-registry " + host + " if"; !strings.Contains(err.Error(), want) {
		// The flag with the value that trusts this registry (issue 40).
		t.Errorf("no policy: %v, want %q", err, want)
	}
	if err := (&Policy{Registries: []string{host}}).Check(ctx, repo, d); err != nil {
		t.Errorf("a trusted registry: %v", err)
	}
	verifier := &Policy{Key: &ci.PublicKey}
	if err := verifier.Check(ctx, repo, d); err == nil {
		t.Error("an unsigned image was believed")
	}
	// A forger's signature does not verify with the CI's key.
	if err := (&Policy{Signer: forger}).Sign(ctx, repo, d); err != nil {
		t.Fatal(err)
	}
	if err := verifier.Check(ctx, repo, d); err == nil {
		t.Error("a signature by another key was believed")
	}
	if err := (&Policy{Signer: ci}).Sign(ctx, repo, d); err != nil {
		t.Fatal(err)
	}
	if err := verifier.Check(ctx, repo, d); err != nil {
		t.Errorf("the CI's signature: %v", err)
	}
	// The signature names the digest: it does not vouch for another image.
	other, _ := random.Image(100, 1)
	od, _ := other.Digest()
	if err := verifier.Check(ctx, repo, od); err == nil {
		t.Error("a signature of one image vouched for another")
	}
}

func TestKeysRoundTrip(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	priv, pub, err := EncodeKeys(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "key"), priv, 0o600)
	os.WriteFile(filepath.Join(dir, "key.pub"), pub, 0o644)
	os.WriteFile(filepath.Join(dir, "junk"), []byte("not a key"), 0o644)
	if got, err := LoadPrivateKey(filepath.Join(dir, "key")); err != nil || !got.Equal(k) {
		t.Errorf("LoadPrivateKey = %v", err)
	}
	if got, err := LoadPublicKey(filepath.Join(dir, "key.pub")); err != nil || !got.Equal(&k.PublicKey) {
		t.Errorf("LoadPublicKey = %v", err)
	}
	if _, err := LoadPublicKey(filepath.Join(dir, "junk")); err == nil || !strings.Contains(err.Error(), "PEM") {
		t.Errorf("LoadPublicKey of junk = %v, want a PEM error", err)
	}
}
