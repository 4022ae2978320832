package assemble

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
)

// checkRuntime makes sure the runtime image holds an entrypoint.
func checkRuntime(rview *oci.View, o *toolOptions) error {
	ep := strings.TrimPrefix(o.entrypoint, "/")
	n, ok := rview.Resolve(ep)
	if !ok || n.Header.Typeflag != tar.TypeReg {
		return fmt.Errorf("%s has no %s: pass a runtime image built with `ssebench runtime build` (--runtime or %s)", o.runtimeRef, o.entrypoint, runtimebin.Env)
	}
	if n.Header.Mode&0o111 == 0 {
		return fmt.Errorf("%s in %s is not executable (mode %04o): rebuild the runtime image", o.entrypoint, o.runtimeRef, n.Header.Mode)
	}
	return nil
}

// seal re-asserts, above the runtime layers, what they would change: the
// runtime's files are root-owned without other-write bits, and /ssebench
// stays 0700. It returns nil when the runtime layers change nothing.
func (b *toolBuild) seal(ctx context.Context, rview *oci.View, rlayers []v1.Layer) (*oci.SpooledLayer, error) {
	var hdrs []*tar.Header
	var files []oci.Node
	err := rview.Walk(func(n oci.Node) error {
		if n.Implicit {
			return nil
		}
		h := n.Header
		want := h.Mode
		if h.Typeflag != tar.TypeSymlink && !(h.IsDir() && h.Mode&0o1000 != 0) {
			want &^= 0o002
		}
		uid, gid := 0, 0
		switch {
		case n.Path == taskDir || n.Path == stateDir || n.Path == repoDir:
			want = 0o700
		case n.Path == modelHome:
			want, uid, gid = 0o755, modelUID, modelGID
		}
		if want == h.Mode && uid == h.Uid && gid == h.Gid {
			return nil
		}
		if h.Typeflag == tar.TypeReg {
			files = append(files, n)
			return nil
		}
		th := h.TarHeader(n.Path)
		th.Mode, th.Uid, th.Gid = want, uid, gid
		hdrs = append(hdrs, th)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(hdrs) == 0 && len(files) == 0 {
		return nil, nil
	}
	l, err := b.newLayer()
	if err != nil {
		return nil, err
	}
	if err := l.headerOnly(hdrs); err != nil {
		l.w.Abort()
		return nil, err
	}
	err = oci.ReadFiles(ctx, rlayers, files, func(n oci.Node, r io.Reader) error {
		w, err := l.file(n, n.Path, n.Header.Mode&^0o002, 0, 0)
		if err != nil || w == nil {
			return err
		}
		_, err = io.Copy(w, r)
		return err
	})
	if err != nil {
		l.w.Abort()
		return nil, fmt.Errorf("copying from %s: %w", b.o.runtimeRef, err)
	}
	return finish(l.w)
}
