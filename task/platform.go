package task

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
)

// The architectures ssebench builds and runs images for.
const (
	ArchAMD64 = "amd64"
	ArchARM64 = "arm64"
)

// DefaultArches returns the arches of a task that has no manifest entry:
// both, amd64 first (SPEC.md section 9). The slice is the caller's.
func DefaultArches() []string { return []string{ArchAMD64, ArchARM64} }

// CheckArches returns an error unless arches is a non-empty list of
// distinct known architectures.
func CheckArches(arches []string) error {
	if len(arches) == 0 {
		return errors.New("must list at least one architecture")
	}
	for i, a := range arches {
		if a != ArchAMD64 && a != ArchARM64 {
			return fmt.Errorf("%q is not one of %s, %s", a, ArchAMD64, ArchARM64)
		}
		if slices.Contains(arches[:i], a) {
			return fmt.Errorf("%q is listed twice", a)
		}
	}
	return nil
}

// Arches returns the architectures of task id from its manifest entry, or
// DefaultArches when the manifest is nil or has no entry for id.
func (m *Manifest) Arches(id string) []string {
	if e := m.Task(id); e != nil && len(e.Arch) > 0 {
		return slices.Clone(e.Arch)
	}
	return DefaultArches()
}

// TaskArches returns the architectures of task id of the dataset folder
// dir, from dir/manifest.json; without that file, or without an entry for
// id, it returns DefaultArches. A manifest that cannot be read is an error.
func TaskArches(dir, id string) ([]string, error) {
	m, err := ReadManifest(filepath.Join(dir, ManifestFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return DefaultArches(), nil
		}
		return nil, err
	}
	return m.Arches(id), nil
}

// HostArch returns the architecture this program runs on, in the names
// arches use (Go's GOARCH names match them).
func HostArch() string { return runtime.GOARCH }

// RunArch picks the architecture to run a task on: hostArch when arches
// lists it, else the first of arches, which then runs under emulation.
// Empty arches means DefaultArches. emulated reports whether arch differs
// from hostArch, so that the caller can warn once.
func RunArch(arches []string, hostArch string) (arch string, emulated bool) {
	if len(arches) == 0 {
		arches = DefaultArches()
	}
	if slices.Contains(arches, hostArch) {
		return hostArch, false
	}
	return arches[0], arches[0] != hostArch
}

// Platform returns the OCI platform string for arch, "linux/<arch>", used
// for every build, pull and run of a task.
func Platform(arch string) string { return "linux/" + arch }
