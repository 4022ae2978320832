package runner

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// RootFS returns where the root file system of running container id is
// mounted on the host: the shim mounts it at <state>/<namespace>/<id>/rootfs
// in the host's mount namespace, whatever containerd's state directory is.
// A path under it can be bind-mounted into another container (a sidecar
// run shares the task container's source tree with the agent container
// this way); /proc/<pid>/root cannot, being in the container's own mount
// namespace.
func (r *Runner) RootFS(id string) (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("finding the root of container %s: %w", id, err)
	}
	defer f.Close()
	suffix := "/" + r.opts.namespace + "/" + id + "/rootfs"
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// ID parent major:minor root mountpoint options ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if strings.HasSuffix(mp, suffix) {
			return mp, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("finding the root of container %s: %w", id, err)
	}
	return "", fmt.Errorf("the root of container %s is not mounted on this host (is it running, and is ssebench in the host's mount namespace?)", id)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// InRoot returns root/rel when every component below root is a real
// directory: runc resolves a bind mount's source on the host, so a
// symlink in a container's tree (a hostile image's) would hand another
// container a directory of the host.
func InRoot(root, rel string) (string, error) {
	p := root
	for _, c := range strings.Split(strings.Trim(path.Clean("/"+rel), "/"), "/") {
		if c == "" {
			continue
		}
		p = filepath.Join(p, c)
		fi, err := os.Lstat(p)
		if err != nil {
			return "", fmt.Errorf("the container has no %s: %w", rel, err)
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("%s in the container is not a directory (%s): refusing to share it", rel, fi.Mode().Type())
		}
	}
	return p, nil
}
