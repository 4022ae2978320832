package remote

import (
	"context"
	"io"
	"log"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/imagetest"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

func nilLogger() *log.Logger { return log.New(io.Discard, "", 0) }

func TestPushImageAndIndex(t *testing.T) {
	reg := startTestRegistry(t)
	img := imagetest.RandomImage(t, 512, 2)
	idx, err := random.Index(256, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		ref     string
		content remote.Taggable
		digest  v1.Hash
	}{
		{name: "image", ref: reg.host + "/a/img:1", content: img, digest: imagetest.Digest(t, img)},
		{name: "index", ref: reg.host + "/a/idx:1", content: idx, digest: imagetest.Digest(t, idx)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			push(t, tc.ref, tc.content)
			r, err := name.ParseReference(tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			desc, err := remote.Get(r)
			if err != nil {
				t.Fatalf("remote.Get after Push: %v", err)
			}
			if desc.Digest != tc.digest {
				t.Errorf("registry has %s, want %s", desc.Digest, tc.digest)
			}
		})
	}
}

func TestPushProgress(t *testing.T) {
	reg := startTestRegistry(t)
	img := imagetest.RandomImage(t, 4096, 2)
	ch := make(chan v1.Update, 100)
	done := make(chan []v1.Update)
	go func() {
		var us []v1.Update
		for u := range ch {
			us = append(us, u)
		}
		done <- us
	}()
	if _, err := Push(context.Background(), reg.host+"/p:1", img, withProgress(ch), WithJobs(2), WithKeychain(authn.NewMultiKeychain())); err != nil {
		t.Fatal(err)
	}
	us := <-done // Push closed the channel, or this would hang.
	if len(us) == 0 {
		t.Fatal("no progress updates")
	}
	if last := us[len(us)-1]; last.Complete != last.Total || last.Error != nil {
		t.Errorf("last update = %+v, want complete", last)
	}
}

type notAnImage struct{}

func (notAnImage) RawManifest() ([]byte, error) { return []byte("{}"), nil }

func TestPushRejects(t *testing.T) {
	_, err := Push(context.Background(), "localhost:5000/x:1", notAnImage{})
	if err == nil || !strings.Contains(err.Error(), "neither an image nor an image index") {
		t.Errorf("Push of a non-image = %v, want an error saying so", err)
	}
	_, err = Push(context.Background(), "Not A Reference", imagetest.RandomImage(t, 10, 1))
	if err == nil || !strings.Contains(err.Error(), `"Not A Reference"`) {
		t.Errorf("Push to a bad reference = %v, want an error quoting it", err)
	}
}

func TestPullWritesWholeImage(t *testing.T) {
	reg := startTestRegistry(t)
	img := imagetest.RandomImage(t, 2048, 3)
	ref := reg.host + "/pull/x:1"
	push(t, ref, img)
	s := imagetest.Store(t)
	res, err := pull(context.Background(), ref, WithStore(s), WithKeychain(authn.NewMultiKeychain()))
	if err != nil {
		t.Fatalf("Pull: %v", err)
	}
	for _, h := range layerDigests(t, img) {
		if !s.HasBlob(h) {
			t.Errorf("layer %s is not in the store after Pull", h)
		}
	}
	stored, err := s.Image(res.Ref)
	if err != nil {
		t.Fatalf("Image after Pull: %v", err)
	}
	if err := validate.Image(stored); err != nil {
		t.Errorf("validate.Image: %v", err)
	}
	if imagetest.Digest(t, stored) != imagetest.Digest(t, img) {
		t.Errorf("stored digest %s, want %s", imagetest.Digest(t, stored), imagetest.Digest(t, img))
	}
}
