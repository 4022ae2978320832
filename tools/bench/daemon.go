package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
)

// daemon is a throwaway buildkitd with its own state directory and socket,
// so that its cache starts empty and the shared daemon's is not touched.
type daemon struct {
	dir  string
	addr string
	cmd  *exec.Cmd
	done chan error
}

// findBuildkitd returns the buildkitd that scripts/install-deps.sh built,
// else the one on PATH.
func findBuildkitd() (string, error) {
	cache := os.Getenv("SSEBENCH_DEV_CACHE")
	if cache == "" {
		cache = "/var/cache/ssebench-dev"
	}
	if m, _ := filepath.Glob(filepath.Join(cache, "buildkit-*", "bin", "buildkitd")); len(m) > 0 {
		sort.Strings(m)
		return m[len(m)-1], nil
	}
	p, err := exec.LookPath("buildkitd")
	if err != nil {
		return "", errors.New("no buildkitd found: run scripts/install-deps.sh or pass -buildkitd")
	}
	return p, nil
}

// startDaemon starts buildkitd in a new directory under parent and waits
// until it answers.
func startDaemon(ctx context.Context, bin, parent, registryHost string) (_ *daemon, retErr error) {
	dir, err := os.MkdirTemp(parent, "buildkitd-")
	if err != nil {
		return nil, err
	}
	d := &daemon{dir: dir, addr: "unix://" + filepath.Join(dir, "buildkitd.sock"), done: make(chan error, 1)}
	cfg := fmt.Sprintf(`root = %q

[grpc]
  address = [%q]

[otel]
  socketPath = %q

[worker.oci]
  enabled = true
  binary = "runc"
  networkMode = "host"
  gc = false

[worker.containerd]
  enabled = false

[registry.%q]
  http = true
`, filepath.Join(dir, "root"), d.addr, filepath.Join(dir, "otel.sock"), registryHost)
	cfgPath := filepath.Join(dir, "buildkitd.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "buildkitd.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	d.cmd = exec.Command(bin, "--config", cfgPath)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	// Its own process group: a ^C to the benchmark must not reach it before
	// stop has asked it to finish.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	defer func() {
		if retErr != nil {
			d.stop()
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-d.done:
			d.done <- err
			return nil, fmt.Errorf("buildkitd exited during start-up (%v); see %s", err, logf.Name())
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		c, err := buildkit.New(ctx, buildkit.WithAddress(d.addr), buildkit.WithProgress(io.Discard),
			buildkit.WithProgressMode(buildkit.ProgressQuiet), buildkit.WithConnectTimeout(2*time.Second))
		if err == nil {
			c.Close()
			return d, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("buildkitd did not answer at %s within 60s: %w", d.addr, err)
		}
	}
}

// stop ends the daemon (SIGTERM, then SIGKILL after 30 s), unmounts what it
// left mounted under its directory and removes the directory.
func (d *daemon) stop() error {
	if d.cmd != nil && d.cmd.Process != nil {
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(30 * time.Second):
			d.cmd.Process.Kill()
			<-d.done
		}
	}
	unmountUnder(d.dir)
	return os.RemoveAll(d.dir)
}

// unmountUnder lazily unmounts every mount point below dir, deepest first.
func unmountUnder(dir string) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return
	}
	defer f.Close()
	var mps []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 1 {
			mp := strings.ReplaceAll(fields[1], `\040`, " ")
			if strings.HasPrefix(mp, dir+"/") {
				mps = append(mps, mp)
			}
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mps)))
	for _, mp := range mps {
		syscall.Unmount(mp, syscall.MNT_DETACH)
	}
}
