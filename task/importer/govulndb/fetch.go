package govulndb

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Fetcher gets a module version's zip, verified.
type Fetcher interface {
	// Fetch returns the path of the module zip and the version's time.
	Fetch(ctx context.Context, path, version string) (zip string, t time.Time, err error)
}

// GoFetcher fetches through the go command (`go mod download -json`): it
// honours GOPROXY, GONOSUMDB, GOPRIVATE, GOFLAGS and GOMODCACHE as every
// other go command does, and checks each zip against the checksum
// database (GOSUMDB) before it is used.
type GoFetcher struct {
	// Go is the go command (default "go").
	Go string
	// Env is added to the environment (tests point GOPROXY at a fake).
	Env []string
}

// Fetch implements Fetcher.
func (f GoFetcher) Fetch(ctx context.Context, path, version string) (string, time.Time, error) {
	goCmd := f.Go
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.CommandContext(ctx, goCmd, "mod", "download", "-json", path+"@v"+version)
	// Outside any module: the downloads must not depend on the current
	// directory's go.mod.
	cmd.Dir = os.TempDir()
	cmd.Env = append(append(os.Environ(), "GO111MODULE=on", "GOWORK=off"), f.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out struct {
		Zip, Info, Error string
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || runErr != nil && out.Error == "" {
		return "", time.Time{}, fmt.Errorf("go mod download %s@v%s: %s (check GOPROXY and the network)", path, version, oneLine(firstNonEmpty(stderr.String(), fmt.Sprint(runErr))))
	}
	if out.Error != "" {
		return "", time.Time{}, fmt.Errorf("go mod download %s@v%s: %s", path, version, oneLine(out.Error))
	}
	var info struct{ Time time.Time }
	if b, err := os.ReadFile(out.Info); err == nil {
		_ = json.Unmarshal(b, &info)
	}
	return out.Zip, info.Time.UTC(), nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}
