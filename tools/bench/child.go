package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/registry/trust"
)

// childResult is what assemble-child prints, as JSON, on stdout.
type childResult struct {
	Digest  string  `json:"digest"`
	Tree    string  `json:"tree"`
	Reused  bool    `json:"reused"`
	Indexed int     `json:"layers_indexed"`
	Fetched int     `json:"layers_fetched"`
	Seconds float64 `json:"seconds"`
}

// runChild assembles one tool image the way `ssebench` would: the case and
// runtime images come through a Resolver backed by the store (pulled from
// the registry when the store lacks them), the layers are spooled in the
// store's temporary directory and the image is written to the store.
func runChild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("assemble-child", flag.ContinueOnError)
	storeDir := fs.String("store", "", "image store directory")
	facts := fs.String("facts", "", "layer facts cache directory")
	caseRef := fs.String("case", "", "case image reference")
	runtimeRef := fs.String("runtime", "", "runtime image reference")
	source := fs.String("source", "/src/proj", "SOURCE_DIR")
	epoch := fs.Int64("time", 0, "build time, seconds since the epoch")
	out := fs.String("out", "", "reference to store the tool image under")
	previous := fs.Bool("previous", false, "offer the image already stored under -out to assemble.WithPrevious")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the assembly to this file")
	factsRepo := fs.String("facts-repo", "", "registry repository of layer facts to fetch from (and publish to, with -publish-facts)")
	publishFacts := fs.Bool("publish-facts", false, "publish the facts of the layers read to -facts-repo")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuprofile != "" {
		pf, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	s, err := store.Open(*storeDir)
	if err != nil {
		return err
	}
	defer s.Close()
	f, err := assemble.NewFacts(*facts)
	if err != nil {
		return err
	}
	if *factsRepo != "" {
		acc, err := remote.New()
		if err != nil {
			return err
		}
		repo, ropts, err := acc.Repository(ctx, *factsRepo)
		if err != nil {
			return err
		}
		// The bench's registry is its own, trusted as CI trusts its own
		// (--trust-registry).
		if err := f.WithRemote(repo, *publishFacts, &trust.Policy{Registries: []string{repo.RegistryStr()}}, ropts...); err != nil {
			return err
		}
	}
	res, err := remote.NewResolver(remote.WithStore(s))
	if err != nil {
		return err
	}
	caseImg, err := res.Image(ctx, *caseRef)
	if err != nil {
		return err
	}
	runtimeImg, err := res.Image(ctx, *runtimeRef)
	if err != nil {
		return err
	}
	outRef, err := name.ParseReference(*out)
	if err != nil {
		return err
	}
	opts := []assemble.ToolOption{
		assemble.WithSourceDir(*source),
		assemble.WithTempDir(s.TempDir()),
		assemble.WithFacts(f),
		assemble.WithTime(time.Unix(*epoch, 0)),
		assemble.WithRefs(*caseRef, *runtimeRef),
	}
	if *previous {
		if prev, err := s.Image(outRef); err == nil {
			opts = append(opts, assemble.WithPrevious(prev))
		}
	}
	if err := os.MkdirAll(s.TempDir(), 0o755); err != nil {
		return err
	}
	tool, err := assemble.Tool(ctx, caseImg, runtimeImg, opts...)
	if err != nil {
		return err
	}
	defer tool.Close()
	if err := s.Write(ctx, outRef, tool); err != nil {
		return fmt.Errorf("writing the tool image: %w", err)
	}
	d, err := tool.Digest()
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(childResult{
		Digest: d.String(), Tree: tool.TreeID, Reused: tool.Reused, Indexed: f.Indexed(), Fetched: f.Fetched(),
		Seconds: time.Since(start).Seconds(),
	})
}
