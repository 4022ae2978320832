package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestStoreCorruptBlobs(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		blob   func(img v1.Image) v1.Hash
		damage func(path string) error
	}{{
		name: "flipped byte in layer",
		blob: firstLayer,
		damage: func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0xff
			return os.WriteFile(p, b, 0o644)
		},
	}, {
		name:   "truncated layer",
		blob:   firstLayer,
		damage: func(p string) error { return os.Truncate(p, 10) },
	}, {
		name:   "missing layer",
		blob:   firstLayer,
		damage: os.Remove,
	}, {
		name: "layer with extra bytes",
		blob: firstLayer,
		damage: func(p string) error {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.Write([]byte("junk"))
			return err
		},
	}, {
		name: "tampered config",
		blob: func(img v1.Image) v1.Hash {
			h, _ := img.ConfigName()
			return h
		},
		damage: func(p string) error { return os.WriteFile(p, []byte(`{"architecture":"evil"}`), 0o644) },
	}, {
		name: "tampered manifest",
		blob: func(img v1.Image) v1.Hash {
			h, _ := img.Digest()
			return h
		},
		damage: func(p string) error { return os.WriteFile(p, []byte(`{}`), 0o644) },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t)
			img := randomImage(t, 2048, 2)
			ref := mustRef(t, "localhost:5000/ssebench/tool/x:1")
			if err := s.Write(ctx, ref, img); err != nil {
				t.Fatal(err)
			}
			h := tc.blob(img)
			if err := tc.damage(s.BlobPath(h)); err != nil {
				t.Fatal(err)
			}
			err := readAll(s, ref)
			if !errors.Is(err, ErrCorruptBlob) {
				t.Fatalf("reading %s with a damaged blob = %v, want ErrCorruptBlob", ref, err)
			}
			msg := err.Error()
			for _, want := range []string{h.String(), ref.Name()} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not name %q", msg, want)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q spans several lines", msg)
			}
			if !strings.Contains(msg, "pull or build the image again") {
				t.Errorf("error %q does not say how to fix it", msg)
			}
		})
	}
}

func firstLayer(img v1.Image) v1.Hash {
	ls, _ := img.Layers()
	h, _ := ls[0].Digest()
	return h
}

// readAll reads every blob of the image ref, as a push or an import would.
func readAll(s *Store, ref name.Reference) error {
	img, err := s.Image(ref)
	if err != nil {
		return err
	}
	ls, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range ls {
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func TestStoreAdoptBlob(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	content := []byte("a spooled layer")
	sum := sha256.Sum256(content)
	h := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}

	wrong := filepath.Join(s.TempDir(), "spool-wrong")
	if err := os.WriteFile(wrong, []byte("something else"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.AdoptBlob(ctx, wrong, h, int64(len(content))); err == nil {
		t.Error("AdoptBlob of a file with other content succeeded")
	}
	if s.HasBlob(h) {
		t.Fatal("a wrong file was adopted")
	}

	spool := filepath.Join(s.TempDir(), "spool-right")
	if err := os.WriteFile(spool, content, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.AdoptBlob(ctx, spool, h, int64(len(content))); err != nil {
		t.Fatalf("AdoptBlob: %v", err)
	}
	rc, err := s.Blob(h, int64(len(content)))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, content) {
		t.Errorf("Blob(%s) = %q, %v; want %q", h, got, err, content)
	}
}
