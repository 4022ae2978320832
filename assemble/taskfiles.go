package assemble

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// LabelTaskSSE is the case image label of the digest of the task folder's
// sse/ files (task.SSEDigest), which casebuild sets.
const LabelTaskSSE = "ssebench.task-sse"

// checkTaskFiles stops the build when the case image's /ssebench does not
// hold the task folder's sse/ files, as its LabelTaskSSE label says: a
// Dockerfile step (or a later layer) that removed /ssebench, or put another
// config.yaml or script there, would have the grader run the case's task
// instead of the folder's. A symlink under /ssebench counts with the file
// it reaches inside /ssebench, as the folder's digest counts it; one that
// reaches out of it is refused. An image without the label (built before
// the label, or by another tool) is not checked: `ssebench build` sets it,
// after the Dockerfile's own labels, so a Dockerfile cannot choose it.
func checkTaskFiles(ctx context.Context, view *oci.View, layers []v1.Layer, labels map[string]string, caseRef string) error {
	want := labels[LabelTaskSSE]
	if want == "" {
		return nil
	}
	names := map[string][]string{} // content path → the names under /ssebench that reach it
	var nodes []oci.Node
	var outside []string
	view.Walk(func(n oci.Node) error {
		if !under(n.Path, taskDir) || n.Path == taskDir {
			return nil
		}
		name := strings.TrimPrefix(n.Path, taskDir+"/")
		switch n.Header.Typeflag {
		case tar.TypeReg:
		case tar.TypeSymlink:
			r, ok := view.Resolve(n.Path)
			if !ok || r.Header.IsDir() {
				return nil // dangling or a folder: not a file, as in Files
			}
			if !under(r.Path, taskDir) || r.Header.Typeflag != tar.TypeReg {
				outside = append(outside, "/"+n.Path)
				return nil
			}
			n = r
		default:
			return nil
		}
		if _, ok := names[n.Path]; !ok {
			nodes = append(nodes, n)
		}
		names[n.Path] = append(names[n.Path], name)
		return nil
	})
	if len(outside) > 0 {
		return fmt.Errorf("/%s in %s is a symlink out of /%s: the case image replaced a task file; rebuild it from the task folder", strings.TrimPrefix(outside[0], "/"), caseRef, taskDir)
	}
	files := map[string]string{}
	err := oci.ReadFiles(ctx, layers, nodes, func(n oci.Node, r io.Reader) error {
		h := sha256.New()
		if _, err := io.Copy(h, r); err != nil {
			return err
		}
		for _, name := range names[n.Path] {
			files[name] = hex.EncodeToString(h.Sum(nil))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the task files of %s: %w", caseRef, err)
	}
	if got := task.DigestFiles(files); got != want {
		list := make([]string, 0, len(files))
		for p := range files {
			list = append(list, p)
		}
		sort.Strings(list)
		what := fmt.Sprintf("%d files", len(list))
		if len(list) == 0 {
			what = "no files"
		}
		return fmt.Errorf("the task files in /%s of %s (%s, digest %.12s) are not the task folder's (label %s %.12s): the case image removed or replaced them; rebuild it from the task folder, with a Dockerfile that leaves /%s alone", taskDir, caseRef, what, got, LabelTaskSSE, want, taskDir)
	}
	return nil
}
