package agentimage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Inputs are what a BuildKit build of an agent image depends on. Two
// builds with the same Inputs make the same image (BuildKit would take
// every step from its cache), so the second may take the first's image
// instead of exporting and grafting it again: for an agent that installs a
// CLI of hundreds of MB, that is most of a run's build time.
type Inputs struct {
	// Builder names the code that builds and grafts (ssebench's version):
	// a new policy or graft must not take an old image.
	Builder string
	// Tool is the tool image's manifest digest: the blind image and the
	// graft's lower layers follow from it.
	Tool v1.Hash
	// Dirs are the build's contexts (the workspace, the agent folder):
	// every entry's path, type and mode, and a file's time, size and
	// content or a link's target, are hashed (not the directories' own
	// names); links are never followed.
	Dirs      []string
	BuildArgs map[string]string
	Platform  string
	Time      time.Time
}

// Key returns the inputs' SHA-256, as 64 hex digits.
func (in Inputs) Key() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "ssebench agent inputs 1\x00%s\x00%s\x00%s\x00%d\x00", in.Builder, in.Tool, in.Platform, in.Time.UTC().UnixNano())
	keys := make([]string, 0, len(in.BuildArgs))
	for k := range in.BuildArgs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "arg\x00%q\x00%q\x00", k, in.BuildArgs[k])
	}
	for i, dir := range in.Dirs {
		fmt.Fprintf(h, "dir\x00%d\x00", i)
		if err := hashTree(h, dir); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashTree writes every entry under dir to h, in WalkDir's lexical order.
func hashTree(h io.Writer, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading the agent's build context: %w", err)
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return fmt.Errorf("reading the agent's build context: %w", err)
		}
		// A directory's time is left out: the workspace's are made anew
		// for each build.
		if fi.IsDir() {
			fmt.Fprintf(h, "%q\x00%o\x00", rel, fi.Mode())
			return nil
		}
		fmt.Fprintf(h, "%q\x00%o\x00%d\x00%d\x00", rel, fi.Mode(), fi.ModTime().UnixNano(), fi.Size())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "link\x00%q\x00", target)
		case fi.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return fmt.Errorf("reading the agent's build context: %w", err)
			}
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return fmt.Errorf("reading %s: %w", p, err)
			}
		}
		return nil
	})
}

// BuilderID names the running program for [Inputs.Builder]: its version and
// the SHA-256 of its executable, so that any change of the code that
// builds, checks and grafts agent images (a dev build keeps its version)
// makes new keys. Hashed once per process.
var BuilderID = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return "unknown " + time.Now().String() // no memo will match
	}
	f, err := os.Open(exe)
	if err != nil {
		return "unknown " + time.Now().String()
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unknown " + time.Now().String()
	}
	return hex.EncodeToString(h.Sum(nil))
})
