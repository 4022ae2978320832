package gobuild

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// flags make the binaries static and reproducible: no cgo, no file
// system paths, no build id, no VCS stamp (a dirty checkout would change
// the bytes), no symbol tables.
var flags = []string{"-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid="}

// Compile runs goTool (a go command, "go" for the one on PATH) to build
// the Go program pkg, a package path relative to dir when it starts with
// ".", into out: static, for p, with the same bytes on any machine. The
// error carries the compiler's output.
func Compile(ctx context.Context, goTool, dir, pkg, out string, p v1.Platform) error {
	args := append([]string{"build"}, flags...)
	args = append(args, "-o", out, pkg)
	cmd := exec.CommandContext(ctx, goTool, args...)
	cmd.Dir = dir
	env := append(os.Environ(),
		"CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture,
		// Baseline instruction sets: the user's environment must not
		// change the bytes, and the binaries must run on any machine
		// of the architecture.
		"GOAMD64=v1", "GOARM64=v8.0",
		// GOFLAGS from the environment could add flags that change
		// the output; ours are on the command line.
		"GOFLAGS=",
	)
	if p.Architecture == "arm" {
		env = append(env, "GOARM="+strings.TrimPrefix(cmp.Or(p.Variant, "v7"), "v"))
	}
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg != "" {
			return fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
		}
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}
