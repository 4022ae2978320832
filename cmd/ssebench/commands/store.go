package commands

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// errStoreProblems makes `store verify` exit 1 after it printed them.
var errStoreProblems = errors.New("the image store has problems")

// storeCmd is what the store's subcommands share: the global flags and
// --json.
type storeCmd struct {
	g      *options.Global
	asJSON bool
}

// look opens the store when there is one (nil when there is none): only
// commands that change the store create it, so on a machine without one
// ls, du, gc and verify report an empty store.
func (sc *storeCmd) look() (*store.Store, error) { return sc.g.LookStore(false) }

// emit prints v as JSON under --json, else what text writes.
func (sc *storeCmd) emit(w io.Writer, v any, text func(io.Writer) error) error {
	if sc.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return text(w)
}

func newCmdStore(g *options.Global) *cobra.Command {
	sc := &storeCmd{g: g}
	cmd := &cobra.Command{
		Use:   "store ls|du|rm|gc|verify",
		Short: "List, measure, clean and check the local image store",
		Long: `The local image store is an OCI image layout (--store, else $SSEBENCH_STORE,
else ~/.local/share/ssebench/store). Its entries may name layers that a
registry holds without their bytes (a tool image whose case layers were
never needed here): they are fetched, verified and kept when first read.`,
		Example: `  ssebench store ls
  ssebench store du --json
  ssebench store rm localhost:5000/ssebench/tool/gjson-196-bf4efcb:1.0.0 && ssebench store gc
  ssebench store verify`,
	}
	groupCommand(cmd)
	cmd.PersistentFlags().BoolVar(&sc.asJSON, "json", false, "print JSON instead of a table")
	cmd.AddCommand(newCmdStoreLs(sc), newCmdStoreDu(sc), newCmdStoreRm(sc), newCmdStoreGC(sc), newCmdStoreVerify(sc))
	return cmd
}

func newCmdStoreLs(sc *storeCmd) *cobra.Command {
	return &cobra.Command{
		Use: "ls",
		Example: `  ssebench store ls
  ssebench store ls --json`,
		Short: "List the store's images",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runStoreLs(cmd, sc) },
	}
}

func runStoreLs(cmd *cobra.Command, sc *storeCmd) error {
	s, err := sc.look()
	if err != nil {
		return err
	}
	var es []store.Entry
	if s != nil {
		defer s.Close()
		if es, err = s.List(); err != nil {
			return err
		}
	}
	rows := store.Listing(es)
	return sc.emit(cmd.OutOrStdout(), rows, func(w io.Writer) error { return store.WriteListing(w, rows) })
}

func newCmdStoreDu(sc *storeCmd) *cobra.Command {
	return &cobra.Command{
		Use: "du",
		Example: `  ssebench store du
  ssebench store du --json`,
		Short: "Show how much each image takes, and what removing it would free",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runStoreDu(cmd, sc) },
	}
}

func runStoreDu(cmd *cobra.Command, sc *storeCmd) error {
	s, err := sc.look()
	if err != nil {
		return err
	}
	u := &store.Usage{Images: []store.ImageUsage{}}
	if s != nil {
		defer s.Close()
		if u, err = s.Usage(); err != nil {
			return err
		}
	}
	return sc.emit(cmd.OutOrStdout(), u, u.WriteTable)
}

func newCmdStoreRm(sc *storeCmd) *cobra.Command {
	return &cobra.Command{
		Use:     "rm NAME...",
		Short:   "Remove names from the store (their blobs stay until gc)",
		Example: `  ssebench store rm localhost:5000/ssebench/tool/gjson-196-bf4efcb:1.0.0`,
		Args:    cobra.MinimumNArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return runStoreRm(cmd, sc, args) },
	}
}

func runStoreRm(cmd *cobra.Command, sc *storeCmd, args []string) error {
	// It changes the store, so it creates one.
	s, err := sc.g.OpenStore()
	if err != nil {
		return err
	}
	defer s.Close()
	for _, a := range args {
		n, err := s.Remove(cmd.Context(), a)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", n)
	}
	return nil
}

func newCmdStoreGC(sc *storeCmd) *cobra.Command {
	return &cobra.Command{
		Use: "gc",
		Example: `  ssebench store gc
  ssebench store gc --json`,
		Short: "Delete the blobs no name needs, and files abandoned by killed commands",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runStoreGC(cmd, sc) },
	}
}

func runStoreGC(cmd *cobra.Command, sc *storeCmd) error {
	s, err := sc.look()
	if err != nil {
		return err
	}
	var res store.GCResult
	if s != nil {
		defer s.Close()
		if res, err = s.GC(cmd.Context()); err != nil {
			return err
		}
	}
	return sc.emit(cmd.OutOrStdout(), res, func(w io.Writer) error {
		_, err := fmt.Fprintln(w, res)
		return err
	})
}

func newCmdStoreVerify(sc *storeCmd) *cobra.Command {
	return &cobra.Command{
		Use: "verify",
		Example: `  ssebench store verify
  ssebench store verify --json`,
		Short: "Check every blob against its digest and every name against its blobs",
		Long: `Read every blob of the store and check it against its digest, and check
that every name's manifests, configs and layers are there (a layer may be
absent when the store knows a registry that holds it). Prints each problem
and exits 1 if there is any.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runStoreVerify(cmd, sc) },
	}
}

func runStoreVerify(cmd *cobra.Command, sc *storeCmd) error {
	s, err := sc.look()
	if err != nil {
		return err
	}
	var probs []store.Problem
	dir := sc.g.Store
	if s != nil {
		defer s.Close()
		dir = s.Dir()
		if probs, err = s.Verify(cmd.Context()); err != nil {
			return err
		}
	} else if dir == "" {
		dir, _ = store.DefaultDir()
	}
	if probs == nil {
		probs = []store.Problem{}
	}
	if err := sc.emit(cmd.OutOrStdout(), probs, func(w io.Writer) error { return store.WriteProblems(w, dir, probs) }); err != nil {
		return err
	}
	if len(probs) > 0 {
		cmd.SilenceErrors = true
		fmt.Fprintf(cmd.ErrOrStderr(), "the image store %s has %s: remove the names with `ssebench store rm` and build or pull them again\n", dir, units.Plural(len(probs), "problem"))
		return errStoreProblems
	}
	return nil
}
