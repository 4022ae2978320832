package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/internal/gobuild"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"gopkg.in/yaml.v3"
)

// goBuild reads go_build: a mapping of output file names to package
// directories, both inside the folder.
//
//	go_build:
//	  sse-loop: .
func goBuild(file string, v *yaml.Node) ([]GoProgram, error) {
	if v.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: line %d: go_build must map output file names to Go package directories, e.g. \"sse-loop: .\"", file, v.Line)
	}
	var out []GoProgram
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, pkg := v.Content[i], v.Content[i+1]
		if pkg.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s: line %d: go_build %q must name a package directory", file, pkg.Line, k.Value)
		}
		name := k.Value
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
			return nil, fmt.Errorf("%s: line %d: go_build output %q must be a plain file name in the agent folder", file, k.Line, name)
		}
		p := strings.TrimSpace(pkg.Value)
		if p == "" || !filepath.IsLocal(filepath.FromSlash(p)) {
			return nil, fmt.Errorf("%s: line %d: go_build package %q must be a directory inside the agent folder, e.g. \".\"", file, pkg.Line, pkg.Value)
		}
		out = append(out, GoProgram{Output: name, Package: filepath.Clean(filepath.FromSlash(p))})
	}
	slices.SortFunc(out, func(a, b GoProgram) int { return strings.Compare(a.Output, b.Output) })
	return out, nil
}

// Build compiles the folder's go_build programs for p, each into its
// output file in the folder, the way the runtime's programs are built
// (static, reproducible). An output that already holds the same bytes is
// left as it is, so that its time, which the agent image may record, does
// not change; another is replaced atomically.
func (a *Agent) Build(ctx context.Context, p v1.Platform) error {
	for _, g := range a.GoBuild {
		dst := filepath.Join(a.Dir, g.Output)
		tmp, err := os.MkdirTemp(a.Dir, ".go-build-")
		if err != nil {
			return fmt.Errorf("building %s of agent %s: %w", g.Output, a.Folder, err)
		}
		err = a.build(ctx, g, dst, filepath.Join(tmp, g.Output), p)
		os.RemoveAll(tmp)
		if err != nil {
			return fmt.Errorf("building %s of agent %s (agent.yaml go_build) for %s: %w", g.Output, a.Folder, platformString(p), err)
		}
	}
	return nil
}

func (a *Agent) build(ctx context.Context, g GoProgram, dst, tmp string, p v1.Platform) error {
	pkgDir, err := a.insideDir(g.Package)
	if err != nil {
		return err
	}
	if err := gobuild.Compile(ctx, "go", pkgDir, ".", tmp, p); err != nil {
		return err
	}
	// Compared only with a regular file of the folder: a symlink there is
	// replaced, never followed (nor its target read).
	if fi, err := os.Lstat(dst); err == nil && fi.Mode().IsRegular() {
		same, err := sameFiles(dst, tmp)
		if err != nil {
			return err
		}
		if same {
			return nil
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func platformString(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// insideDir resolves the package directory rel of the folder, symlinks
// included, and refuses one that leaves it: the compiler would read (and
// go:embed copy into the image) files from elsewhere on the host.
func (a *Agent) insideDir(rel string) (string, error) {
	root, err := filepath.EvalSymlinks(a.Dir)
	if err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(root, rel))
	if err != nil {
		return "", fmt.Errorf("package directory %s: %w", rel, err)
	}
	if r, err := filepath.Rel(root, dir); err != nil || !filepath.IsLocal(r) && r != "." {
		return "", fmt.Errorf("package directory %s leads out of the agent folder (to %s): go_build packages must be inside it", rel, dir)
	}
	return dir, nil
}

// sameFiles says whether two files hold the same bytes, reading both in
// blocks.
func sameFiles(a, b string) (bool, error) {
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	ia, _ := fa.Stat()
	ib, _ := fb.Stat()
	if ia.Size() != ib.Size() {
		return false, nil
	}
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, _ := io.ReadFull(fb, bb)
		if !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		if ea != nil {
			return true, nil
		}
	}
}
