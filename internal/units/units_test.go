package units

import (
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 12<<20 + 300<<10: "12.3 MiB", 3 << 30: "3.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestPluralAndDigest(t *testing.T) {
	if Plural(1, "blob") != "1 blob" || Plural(2, "blob") != "2 blobs" || Plural(0, "image") != "0 images" {
		t.Error("Plural")
	}
	h := v1.Hash{Algorithm: "sha256", Hex: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
	if got := Digest(h); got != "sha256:0123456789ab…" {
		t.Errorf("Digest = %q", got)
	}
}
