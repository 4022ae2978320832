package assemble

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/42-b3yond-6ug/ssebench/assemble/gitrepo"
	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
)

// SidecarScript is the task container's entrypoint script (SPEC.md section
// 7): /run/ssebench and its agent/ root-owned 0755, the daemon with its
// admin socket in the first and its agent socket in the second (the one
// directory the agent container mounts), its log in ${SSE_RESULTS:-$SSE_ARCHIVE}/daemon.log, then the
// entrypoint program, which waits for the agent container's end and grades.
const SidecarScript = `#!/bin/sh
# The task container of a sidecar run (SPEC.md section 7).
set -eu
mkdir -p ` + contract.SidecarAgentDir + `
chown 0:0 ` + contract.SidecarDir + ` ` + contract.SidecarAgentDir + `
chmod 0755 ` + contract.SidecarDir + ` ` + contract.SidecarAgentDir + `
export SSE_DAEMON_SOCKET=` + contract.SidecarTaskAgentSocket + `
export SSE_ADMIN_SOCKET=` + contract.SidecarAdminSocket + `
log="${SSE_RESULTS:-${SSE_ARCHIVE:-/tmp}}"
mkdir -p "$log"
` + runtimebin.Daemon + ` >>"$log/daemon.log" 2>&1 &
exec ` + contract.SidecarTaskEntrypoint + ` --mode sidecar-task "$@"
`

// SidecarTask turns a case image into the task image of sidecar mode,
// tool-sidecar/<task> (SPEC.md section 7): steps 1 to 8 of section 4, as
// Tool does them, then the daemon and the entrypoint program of runtimeImg
// under /ssebench and the script SidecarScript as the ENTRYPOINT. The
// runtime's other files (the MCP server) belong to the agent container and
// are left out. The options are Tool's.
func SidecarTask(ctx context.Context, caseImg, runtimeImg v1.Image, opts ...ToolOption) (_ *ToolImage, retErr error) {
	o, err := makeToolOptions(opts...)
	if err != nil {
		return nil, err
	}
	files := []runtimeFile{
		{from: runtimebin.Daemon, to: runtimebin.Daemon, mode: 0o700},
		{from: runtimebin.Entrypoint, to: contract.SidecarTaskEntrypoint, mode: 0o700},
	}
	extra := []smallFile{{hdr: &tar.Header{Typeflag: tar.TypeReg, Name: contract.Rel(contract.SidecarScript), Mode: 0o700}, data: []byte(SidecarScript)}}
	dirs := []*tar.Header{{Typeflag: tar.TypeDir, Name: taskDir, Mode: 0o700}}
	rt, spool, err := runtimeSubset(ctx, runtimeImg, o, files, dirs, extra)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			spool.Remove()
		}
	}()
	t, err := Tool(ctx, caseImg, rt, append(slices.Clone(opts), func(o *toolOptions) error {
		o.entrypoint = contract.SidecarScript
		return nil
	})...)
	if err != nil {
		return nil, err
	}
	t.spools = append(t.spools, spool)
	return t, nil
}

// SidecarAgentEntrypoint is the ENTRYPOINT of tool-sidecar-agent.
var SidecarAgentEntrypoint = []string{runtimebin.Entrypoint, "--mode", "sidecar", "--"}

// SidecarAgent assembles tool-sidecar-agent (SPEC.md section 7), the image
// every sidecar agent image starts from, with no case image below it: the
// OS image osImg, then one layer with the accounts of section 4 step 3
// (model 1000:1000, /home/model with the git identity; sse-runner too, as
// the same rewrite makes it), other-write bits removed (step 4),
// /var/lib/ssebench root 0700, and one layer with the runtime's entrypoint
// and MCP server (SidecarMCP). Its ENTRYPOINT is SidecarAgentEntrypoint.
// There is no /ssebench, no /ssebench-repo and no daemon. The options are
// Tool's but WithSourceDir and WithPrevious, which do not apply; the
// default time is the OS image's creation time, so the same inputs give
// the same image anywhere.
func SidecarAgent(ctx context.Context, osImg, runtimeImg v1.Image, opts ...ToolOption) (_ *ToolImage, retErr error) {
	opts = append([]ToolOption{func(o *toolOptions) error { o.sourceDir = "-"; return nil }}, opts...)
	o, err := makeToolOptions(opts...)
	if err != nil {
		return nil, err
	}
	o.sourceDir, o.previous = "", nil
	if o.caseRef == "the case image" {
		o.caseRef = "the OS image"
	}
	osDiffs, err := checkMetadata(osImg, o.caseRef)
	if err != nil {
		return nil, err
	}
	cf, err := osImg.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of %s: %w", o.caseRef, err)
	}
	rcf, err := runtimeImg.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of %s: %w", o.runtimeRef, err)
	}
	if err := checkPlatforms(cf, rcf, o.caseRef, o.runtimeRef); err != nil {
		return nil, err
	}
	if o.when.IsZero() {
		o.when = cf.Created.UTC().Truncate(time.Second)
	}
	layers, err := osImg.Layers()
	if err != nil {
		return nil, fmt.Errorf("reading the layers of %s: %w", o.caseRef, err)
	}
	idxs, err := o.facts.indexes(ctx, layers)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", o.caseRef, err)
	}
	if err := checkDiffIDs(o.caseRef, layers, osDiffs, idxs); err != nil {
		return nil, err
	}
	view, err := oci.Merge(idxs)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", o.caseRef, err)
	}
	if err := checkReserved(view, o); err != nil {
		return nil, err
	}
	t := &ToolImage{}
	defer func() {
		if retErr != nil {
			t.Close()
		}
	}()
	b := &toolBuild{o: o, view: view, layers: layers}
	sys, err := b.agentSystem(ctx, t)
	if err != nil {
		return nil, err
	}
	t.spools = append(t.spools, sys)
	files := []runtimeFile{
		{from: runtimebin.Entrypoint, to: runtimebin.Entrypoint, mode: 0o755},
		{from: runtimebin.MCP, to: contract.SidecarMCP, mode: 0o700},
	}
	dirs := []*tar.Header{{Typeflag: tar.TypeDir, Name: contract.Rel(contract.SidecarMCPDir), Mode: 0o700}}
	_, rspool, err := runtimeSubset(ctx, runtimeImg, o, files, dirs, nil)
	if err != nil {
		return nil, err
	}
	t.spools = append(t.spools, rspool)
	rdig, err := runtimeImg.Digest()
	if err != nil {
		return nil, err
	}
	odig, err := osImg.Digest()
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: o.when}
	img, err := mutate.Append(osImg,
		mutate.Addendum{Layer: sys, History: history(created, "system (accounts, other-write removal, /home/model, /var/lib/ssebench)")},
		mutate.Addendum{Layer: rspool, History: history(created, fmt.Sprintf("entrypoint and MCP server of %s", rdig))},
	)
	if err != nil {
		return nil, fmt.Errorf("appending layers: %w", err)
	}
	// OpenCode, when the runtime carries it: the agent's server goes
	// with the agent, into this container.
	ocLayers, err := runtimeOpenCode(runtimeImg, rcf)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", o.runtimeRef, err)
	}
	for _, l := range ocLayers {
		if img, err = mutate.Append(img, mutate.Addendum{Layer: l, History: history(created, fmt.Sprintf("OpenCode of %s", rdig))}); err != nil {
			return nil, fmt.Errorf("appending layers: %w", err)
		}
	}
	ncf := cf.DeepCopy()
	ncf.Config.Entrypoint = slices.Clone(SidecarAgentEntrypoint)
	ncf.Config.Cmd = nil
	ncf.Config.User = ""
	ncf.Config.Env = slices.DeleteFunc(ncf.Config.Env, func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return contract.RunOnly(k)
	})
	if img, err = mutate.Config(img, ncf.Config); err != nil {
		return nil, fmt.Errorf("setting the entrypoint: %w", err)
	}
	if img, err = mutate.CreatedAt(img, created); err != nil {
		return nil, fmt.Errorf("setting the creation time: %w", err)
	}
	t.Image = mutate.Annotations(img, map[string]string{
		AnnotationBaseDigest:    odig.String(),
		AnnotationRuntimeDigest: rdig.String(),
	}).(v1.Image)
	return t, nil
}

// agentSystem writes the system layer of the sidecar agent image.
func (b *toolBuild) agentSystem(ctx context.Context, t *ToolImage) (*oci.SpooledLayer, error) {
	acct, err := b.accounts(ctx)
	if err != nil {
		return nil, err
	}
	t.RunnerUID, t.RunnerGID = acct.res.RunnerUID, acct.res.RunnerGID
	var hdrs []*tar.Header
	var content []oci.Node
	err = b.view.Walk(func(n oci.Node) error {
		if acct.removed[n.Path] {
			if n.Header.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if acct.files[n.Path] != nil || n.Path == modelHome || n.Implicit {
			return nil
		}
		h := n.Header
		nm := b.mode(n.Path, &h)
		if nm == h.Mode {
			return nil
		}
		if h.Typeflag == tar.TypeReg {
			content = append(content, n)
			return nil
		}
		th := h.TarHeader(n.Path)
		th.Mode = nm
		hdrs = append(hdrs, th)
		return nil
	})
	if err != nil {
		return nil, err
	}
	hdrs = append(hdrs, acct.headers...)
	hdrs = append(hdrs, b.ensureDirs(stateDir, 0o700, 0, 0)...)
	hdrs = append(hdrs, b.ensureDirs(modelHome, 0o755, modelUID, modelGID)...)
	l, err := b.newLayer()
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			l.w.Abort()
		}
	}()
	if err := l.headerOnly(hdrs); err != nil {
		return nil, err
	}
	for _, f := range acct.contents {
		if err := l.small(f.hdr, f.data); err != nil {
			return nil, err
		}
	}
	gitconfig := &tar.Header{Typeflag: tar.TypeReg, Name: modelHome + "/.gitconfig", Mode: 0o644, Uid: modelUID, Gid: modelGID, ModTime: b.o.when}
	if err := l.small(gitconfig, gitrepo.UserConfig(gitrepo.DefaultName, gitrepo.DefaultEmail)); err != nil {
		return nil, err
	}
	err = oci.ReadFiles(ctx, b.layers, content, func(n oci.Node, r io.Reader) error {
		w, err := l.file(n, n.Path, b.mode(n.Path, &n.Header), n.Header.Uid, n.Header.Gid)
		if err != nil || w == nil {
			return err
		}
		_, err = io.Copy(w, r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("copying from %s: %w", b.o.caseRef, err)
	}
	sl, err := finish(l.w)
	if err != nil {
		return nil, err
	}
	ok = true
	return sl, nil
}

// runtimeFile is a file taken from the runtime image: from there, to here,
// root-owned with mode.
type runtimeFile struct {
	from, to string
	mode     int64
}

// runtimeSubset returns an image of one layer holding the directories
// dirs, files taken from runtimeImg and the small files extra (all
// root-owned, times those of the runtime image's creation), for the
// platform of runtimeImg, and that layer. It is how the sidecar images
// take only part of the runtime, and put it elsewhere.
func runtimeSubset(ctx context.Context, runtimeImg v1.Image, o *toolOptions, files []runtimeFile, dirs []*tar.Header, extra []smallFile) (v1.Image, *oci.SpooledLayer, error) {
	rcf, err := runtimeImg.ConfigFile()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the config of %s: %w", o.runtimeRef, err)
	}
	if _, err := checkMetadata(runtimeImg, o.runtimeRef); err != nil {
		return nil, nil, err
	}
	when := rcf.Created.UTC().Truncate(time.Second)
	if rcf.Created.IsZero() {
		// A runtime made by hand may say nothing: the epoch, as
		// runtimebin uses without SOURCE_DATE_EPOCH.
		when = time.Unix(0, 0).UTC()
	}
	rlayers, err := runtimeImg.Layers()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the layers of %s: %w", o.runtimeRef, err)
	}
	ridxs, err := o.facts.indexes(ctx, rlayers)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", o.runtimeRef, err)
	}
	rview, err := oci.Merge(ridxs)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", o.runtimeRef, err)
	}
	var nodes []oci.Node
	dest := map[string]runtimeFile{}
	for _, f := range files {
		n, ok := rview.Resolve(contract.Rel(f.from))
		if !ok || n.Header.Typeflag != tar.TypeReg {
			return nil, nil, fmt.Errorf("%s has no %s: pass a runtime image built with `ssebench runtime build` (--runtime or %s)", o.runtimeRef, f.from, runtimebin.Env)
		}
		nodes = append(nodes, n)
		dest[n.Path] = f
	}
	w, err := oci.NewLayerWriter(o.tempDir, oci.WithCompression(o.compression), oci.WithDefaultTime(when))
	if err != nil {
		return nil, nil, err
	}
	l := newLayerOut(w)
	fail := func(err error) (v1.Image, *oci.SpooledLayer, error) { w.Abort(); return nil, nil, err }
	for _, d := range dirs {
		h := *d
		h.ModTime = when
		if err := w.WriteHeader(&h); err != nil {
			return fail(err)
		}
	}
	err = oci.ReadFiles(ctx, rlayers, nodes, func(n oci.Node, r io.Reader) error {
		f := dest[n.Path]
		h := n.Header.TarHeader(contract.Rel(f.to))
		h.Mode, h.Uid, h.Gid, h.ModTime = f.mode, 0, 0, when
		if err := w.WriteHeader(h); err != nil {
			return err
		}
		_, err := io.Copy(w, r)
		return err
	})
	if err != nil {
		return fail(fmt.Errorf("copying from %s: %w", o.runtimeRef, err))
	}
	for _, f := range extra {
		h := *f.hdr
		h.ModTime = when
		if err := l.small(&h, f.data); err != nil {
			return fail(err)
		}
	}
	sl, err := finish(w)
	if err != nil {
		return nil, nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: sl})
	if err == nil {
		img, err = mutate.ConfigFile(img, &v1.ConfigFile{OS: rcf.OS, Architecture: rcf.Architecture, Variant: rcf.Variant,
			Created: rcf.Created, RootFS: v1.RootFS{Type: "layers", DiffIDs: []v1.Hash{mustDiffID(sl)}}})
	}
	if err != nil {
		sl.Remove()
		return nil, nil, err
	}
	return img, sl, nil
}

func mustDiffID(l *oci.SpooledLayer) v1.Hash {
	d, _ := l.DiffID()
	return d
}

// runtimeOpenCode returns the OpenCode layers of a runtime image that
// carries OpenCode (runtimebin.LabelOpenCodeVersion): those its history
// names as OpenCode's.
func runtimeOpenCode(img v1.Image, cf *v1.ConfigFile) ([]v1.Layer, error) {
	if cf.Config.Labels[runtimebin.LabelOpenCodeVersion] == "" {
		return nil, nil
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	var out []v1.Layer
	i := 0
	for _, h := range cf.History {
		if h.EmptyLayer {
			continue
		}
		if i < len(layers) && strings.HasPrefix(h.Comment, "OpenCode ") {
			out = append(out, layers[i])
		}
		i++
	}
	return out, nil
}
