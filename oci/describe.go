package oci

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// DescribedLayer is one layer of a Description.
type DescribedLayer struct {
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	DiffID    string `json:"diff_id"`
	MediaType string `json:"media_type"`
	What      string `json:"what,omitempty"`
}

// Description is what `ssebench inspect` shows of an image: where it
// comes from, the platforms of its index, its config and each layer with
// what made it. Name and Source are the caller's: the reference it was
// resolved from, and "store" or "registry".
type Description struct {
	Name        string            `json:"name"`
	Digest      string            `json:"digest"`
	Source      string            `json:"source"`
	IndexDigest string            `json:"index_digest,omitempty"`
	Platforms   []string          `json:"platforms,omitempty"`
	Platform    string            `json:"platform"`
	Created     string            `json:"created,omitempty"`
	Entrypoint  []string          `json:"entrypoint"`
	Cmd         []string          `json:"cmd"`
	Env         []string          `json:"env"`
	WorkingDir  string            `json:"working_dir"`
	User        string            `json:"user"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Layers      []DescribedLayer  `json:"layers"`
}

// Describe describes img and, when it was picked out of one, the index
// idx (nil for none), without reading a layer.
func Describe(img v1.Image, idx v1.ImageIndex) (*Description, error) {
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	out := &Description{
		Digest:      d.String(),
		Platform:    (&v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}).String(),
		Entrypoint:  cf.Config.Entrypoint,
		Cmd:         cf.Config.Cmd,
		Env:         cf.Config.Env,
		WorkingDir:  cf.Config.WorkingDir,
		User:        cf.Config.User,
		Labels:      cf.Config.Labels,
		Annotations: m.Annotations,
	}
	if !cf.Created.IsZero() {
		out.Created = cf.Created.UTC().Format("2006-01-02T15:04:05Z")
	}
	if idx != nil {
		id, err := idx.Digest()
		if err != nil {
			return nil, err
		}
		out.IndexDigest = id.String()
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		for _, md := range im.Manifests {
			if md.Platform != nil {
				out.Platforms = append(out.Platforms, md.Platform.String())
			}
		}
	}
	// History entries that made a layer line up with the layers.
	var what []string
	for _, h := range cf.History {
		if h.EmptyLayer {
			continue
		}
		// CreatedBy says what made the layer; BuildKit's Comment only
		// names the frontend.
		w := h.CreatedBy
		if w == "" {
			w = h.Comment
		}
		what = append(what, strings.Join(strings.Fields(w), " "))
	}
	for i, l := range m.Layers {
		il := DescribedLayer{Digest: l.Digest.String(), Size: l.Size, MediaType: string(l.MediaType)}
		if i < len(cf.RootFS.DiffIDs) {
			il.DiffID = cf.RootFS.DiffIDs[i].String()
		}
		if i < len(what) {
			il.What = what[i]
		}
		out.Layers = append(out.Layers, il)
	}
	return out, nil
}

// WriteText writes r as lines, as `ssebench inspect` prints it.
func (r *Description) WriteText(w io.Writer) {
	fmt.Fprintf(w, "Name:        %s\n", r.Name)
	fmt.Fprintf(w, "Digest:      %s (from the %s)\n", r.Digest, r.Source)
	if r.IndexDigest != "" {
		fmt.Fprintf(w, "Index:       %s\n", r.IndexDigest)
		fmt.Fprintf(w, "Platforms:   %s\n", strings.Join(r.Platforms, ", "))
	}
	fmt.Fprintf(w, "Platform:    %s\n", r.Platform)
	if r.Created != "" {
		fmt.Fprintf(w, "Created:     %s\n", r.Created)
	}
	fmt.Fprintf(w, "Entrypoint:  %s\n", jsonList(r.Entrypoint))
	fmt.Fprintf(w, "Cmd:         %s\n", jsonList(r.Cmd))
	fmt.Fprintf(w, "WorkingDir:  %s\n", r.WorkingDir)
	fmt.Fprintf(w, "User:        %s\n", r.User)
	fmt.Fprintf(w, "Env:\n")
	for _, e := range r.Env {
		fmt.Fprintf(w, "  %s\n", e)
	}
	fmt.Fprintf(w, "Labels:\n")
	keys := make([]string, 0, len(r.Labels))
	for k := range r.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s=%s\n", k, r.Labels[k])
	}
	fmt.Fprintf(w, "Layers:\n")
	for i, l := range r.Layers {
		fmt.Fprintf(w, "  %2d  %s  %9s  diffID %s\n", i+1, l.Digest, humanSize(l.Size), l.DiffID)
		if l.What != "" {
			fmt.Fprintf(w, "      %s\n", l.What)
		}
	}
}

func jsonList(s []string) string {
	if s == nil {
		return "(none)"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
