// Package units formats sizes, counts and digests for people: the words
// every report of ssebench shares.
package units

import (
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Bytes formats n bytes with binary units: "512 B", "12.3 MiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		f /= unit
		if f < unit && f > -unit {
			return fmt.Sprintf("%.1f %s", f, u)
		}
	}
	return fmt.Sprintf("%.1f PiB", f/unit)
}

// Plural is "1 blob", "2 blobs".
func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Digest shortens a digest to 12 hex digits: "sha256:0123456789ab…".
func Digest(h v1.Hash) string {
	if len(h.Hex) <= 12 {
		return h.String()
	}
	return h.Algorithm + ":" + h.Hex[:12] + "…"
}
