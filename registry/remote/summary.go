package remote

// What the CLI's --json prints of a push, a copy and a mirror, and the
// table of a --dry-run: the reports above in the shapes scripts read
// (snake_case keys, digests as strings, no blob lists).

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
)

// PushSummary is a PushReport without its blob list.
type PushSummary struct {
	Uploaded      int64 `json:"uploaded_bytes"`
	Mounted       int64 `json:"mounted_bytes"`
	Skipped       int64 `json:"skipped_bytes"`
	UploadedBlobs int   `json:"uploaded_blobs"`
	MountedBlobs  int   `json:"mounted_blobs"`
	SkippedBlobs  int   `json:"skipped_blobs"`
	Manifests     int   `json:"manifests"`
}

// Summary is r without its blob list; nil for a nil r.
func (r *PushReport) Summary() *PushSummary {
	if r == nil {
		return nil
	}
	return &PushSummary{Uploaded: r.Uploaded, Mounted: r.Mounted, Skipped: r.Skipped,
		UploadedBlobs: r.UploadedBlobs, MountedBlobs: r.MountedBlobs, SkippedBlobs: r.SkippedBlobs, Manifests: r.Manifests}
}

// ImageDigest is an image a command wrote or checked.
type ImageDigest struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
}

// PushOutput is the images a push wrote and what it moved.
type PushOutput struct {
	Images []ImageDigest `json:"images"`
	Push   *PushSummary  `json:"push"`
}

// CopySummary is what a copy or a tag did.
type CopySummary struct {
	Source    string       `json:"source"`
	Target    string       `json:"target"`
	Digest    string       `json:"digest"`
	FromStore bool         `json:"from_store"`
	Push      *PushSummary `json:"push,omitempty"`
}

// Summary is c's summary; its push is left out when nothing was written
// (a tag in the store).
func (c *Copied) Summary() CopySummary {
	out := CopySummary{Source: c.Source, Target: c.Target, Digest: c.Digest.String(), FromStore: c.FromStore}
	if c.Push.Manifests > 0 || len(c.Push.Blobs) > 0 {
		out.Push = c.Push.Summary()
	}
	return out
}

// MirrorSummary is what a mirror copied.
type MirrorSummary struct {
	Images  []MirrorEntry `json:"images"`
	Missing []string      `json:"missing,omitempty"`
	Push    *PushSummary  `json:"push"`
}

// MirrorEntry is one image of a MirrorSummary.
type MirrorEntry struct {
	Source string `json:"source"`
	Target string `json:"target"`
	Digest string `json:"digest"`
}

// Summary is r's summary.
func (r *MirrorReport) Summary() MirrorSummary {
	out := MirrorSummary{Images: []MirrorEntry{}, Missing: r.Missing, Push: r.Push.Summary()}
	for _, im := range r.Images {
		out.Images = append(out.Images, MirrorEntry{Source: im.Source, Target: im.Target, Digest: im.Digest.String()})
	}
	return out
}

// WriteTable writes what a --dry-run would do: one line per image, then
// the totals.
func (plan *Plan) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tDIGEST\tBLOBS\tEXISTING\tMOUNT\tUPLOAD\tTAG")
	for _, im := range plan.Images {
		tag := "new"
		switch im.Current {
		case "":
		case im.Digest:
			tag = "unchanged"
		default:
			tag = "moves from " + shortDigest(im.Current)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d (%s)\t%d (%s)\t%d (%s)\t%d (%s)\t%s\n", im.Target, shortDigest(im.Digest),
			im.Blobs, units.Bytes(im.Bytes), im.Existing, units.Bytes(im.ExistingBytes),
			im.Mountable, units.Bytes(im.MountableBytes), im.Upload, units.Bytes(im.UploadBytes), tag)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range plan.Missing {
		fmt.Fprintf(w, "missing from the source registry: %s\n", m)
	}
	_, err := fmt.Fprintf(w, "dry run: would upload %s (%s) for %s; nothing was written\n",
		units.Bytes(plan.UploadBytes), units.Plural(plan.UploadBlobs, "blob"), units.Plural(len(plan.Images), "image"))
	return err
}

func shortDigest(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}
