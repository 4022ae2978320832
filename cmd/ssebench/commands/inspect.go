package commands

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// inspectTimeout is inspect's deadline for all its registry requests
// unless --registry-timeout says otherwise.
const inspectTimeout = 10 * time.Minute

type inspectOptions struct {
	Platform string
	JSON     bool
}

// inspectLayer is one layer as inspect shows it.
type inspectLayer struct {
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	DiffID    string `json:"diff_id"`
	MediaType string `json:"media_type"`
	What      string `json:"what,omitempty"`
}

type inspectResult struct {
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
	Layers      []inspectLayer    `json:"layers"`
}

func newCmdInspect(g *options.Global) *cobra.Command {
	o := &inspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect REF",
		Short: "Show an image's platforms, config and layers",
		Long: `Show where an image comes from (the local store first, else its registry,
following --pull), the platforms of its index, its config (entrypoint, cmd,
env, workdir, user, labels) and each layer with digest, size, diffID and what
it is (its history comment). Layers are not downloaded.`,
		Example: `  ssebench inspect localhost:5000/ssebench/tool/kvconf-12-afb9ee1:0.1.0-dev
  ssebench inspect --platform linux/arm64 --json localhost:5000/ssebench/runtime:0.1.0-dev`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Manifests and configs only: a registry that takes longer
			// is holding the command, not serving it.
			g.DefaultRegistryTimeout = inspectTimeout
			res, done, err := resolve(cmd, g, args[0], o.Platform, true)
			if err != nil {
				return err
			}
			defer done()
			out, err := describe(res)
			if err != nil {
				return fmt.Errorf("inspecting %s: %w", args[0], err)
			}
			if o.JSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			printInspect(cmd.OutOrStdout(), out)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Platform, "platform", "", "platform to pick from an index (default linux/<host arch>)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func describe(res *remote.Resolved) (*inspectResult, error) {
	img := res.Image
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
	out := &inspectResult{
		Name:        res.Ref.Name(),
		Digest:      d.String(),
		Source:      sourceName(res.FromRegistry),
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
	if res.Index != nil {
		id, err := res.Index.Digest()
		if err != nil {
			return nil, err
		}
		out.IndexDigest = id.String()
		im, err := res.Index.IndexManifest()
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
		il := inspectLayer{Digest: l.Digest.String(), Size: l.Size, MediaType: string(l.MediaType)}
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

func printInspect(w io.Writer, r *inspectResult) {
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

// sourceName is where inspect says an image came from.
func sourceName(fromRegistry bool) string {
	if fromRegistry {
		return "registry"
	}
	return "store"
}
