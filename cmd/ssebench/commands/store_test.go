package commands_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// TestStoreCommands drives `ssebench store` as a user would: ls and du list
// what is there, verify finds a flipped byte and a missing blob and exits 1
// naming them, and gc after rm frees exactly the blobs only that name used.
func TestStoreCommands(t *testing.T) {
	c := newCLI(t)
	shared, err := random.Layer(4096, types.OCILayer)
	if err != nil {
		t.Fatal(err)
	}
	imgA, imgB := imageWithLayers(t, shared, 3000), imageWithLayers(t, shared, 5000)
	c.storeImage(t, "localhost:5000/t/a:1", imgA)
	c.storeImage(t, "localhost:5000/t/b:1", imgB)

	out, _ := c.mustRun(t, "store", "ls")
	if !strings.Contains(out, "localhost:5000/t/a:1") || !strings.Contains(out, "localhost:5000/t/b:1") {
		t.Errorf("store ls = %q, want both images", out)
	}
	out, _ = c.mustRun(t, "store", "du", "--json")
	var u store.Usage
	if err := json.Unmarshal([]byte(out), &u); err != nil || len(u.Images) != 2 {
		t.Fatalf("store du --json = %q (%v), want two images", out, err)
	}
	if out, _ := c.mustRun(t, "store", "verify"); !strings.HasPrefix(out, "ok ") {
		t.Errorf("store verify on a sound store = %q, want ok", out)
	}

	// gc after rm frees b's own blobs (its layer, config and manifest),
	// not the layer a still uses.
	before := blobFiles(t, c.store)
	c.mustRun(t, "store", "rm", "localhost:5000/t/b:1")
	// A name the store lacks: the error says which command lists its names.
	_, _, err = c.run(t, "store", "rm", "localhost:5000/t/b:1")
	oneLine(t, err)
	if want := "localhost:5000/t/b:1 is not a name in the image store " + c.store + ": `ssebench store ls` lists the names it holds"; err == nil || err.Error() != want {
		t.Errorf("store rm of a removed name = %v, want %q", err, want)
	}
	out, _ = c.mustRun(t, "store", "gc", "--json")
	var gc store.GCResult
	if err := json.Unmarshal([]byte(out), &gc); err != nil || gc.Blobs != 3 {
		t.Errorf("store gc after rm = %q, want 3 blobs freed (b's layer, config and manifest)", out)
	}
	if after := blobFiles(t, c.store); len(after) != len(before)-3 || !after[digestHex(t, shared)] {
		t.Errorf("gc left %d of %d blobs (shared layer kept: %v)", len(after), len(before), after[digestHex(t, shared)])
	}

	// A flipped byte and a missing blob: verify names both and exits 1.
	flipped := filepath.Join(c.store, "blobs", "sha256", digestHex(t, shared))
	b, err := os.ReadFile(flipped)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(flipped, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _ := imgA.ConfigName()
	if err := os.Remove(filepath.Join(c.store, "blobs", "sha256", cfg.Hex)); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := c.run(t, "store", "verify")
	if err == nil {
		t.Fatalf("store verify on a damaged store succeeded: %q", out)
	}
	for _, want := range []string{digestHex(t, shared), cfg.Hex, "missing", "has digest"} {
		if !strings.Contains(out, want) {
			t.Errorf("store verify output %q does not name %s", out, want)
		}
	}
	if !strings.Contains(stderr, "2 problems") {
		t.Errorf("store verify stderr = %q, want the count of problems", stderr)
	}
}

func blobFiles(t *testing.T, dir string) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, e := range ents {
		m[e.Name()] = true
	}
	return m
}

// imageWithLayers is an image of shared plus a random layer of its own of
// size bytes.
func imageWithLayers(t *testing.T, shared v1.Layer, size int64) v1.Image {
	t.Helper()
	own, err := random.Layer(size, types.OCILayer)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, shared, own)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func digestHex(t *testing.T, l interface{ Digest() (v1.Hash, error) }) string {
	t.Helper()
	h, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h.Hex
}
