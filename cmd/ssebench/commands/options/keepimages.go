package options

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// KeepImagesEnv sets --keep-images when the flag is not given.
const KeepImagesEnv = "SSEBENCH_KEEP_IMAGES"

// KeepImages is what becomes of the images a run puts into containerd
// (--keep-images): they stay under a budget (the default), all stay, or
// none does.
type KeepImages struct {
	// Keep leaves them in containerd; false removes each after the last
	// run of the command that needs it ("none").
	Keep bool
	// Budget bounds, with Keep, what the images ssebench imported take
	// in its namespace; 0 is no bound ("all").
	Budget int64
}

// DefaultKeepImages is the policy without --keep-images or
// SSEBENCH_KEEP_IMAGES: keep them under runner.DefaultImageBudget.
func DefaultKeepImages() KeepImages {
	return KeepImages{Keep: true, Budget: runner.DefaultImageBudget}
}

// AddKeepImagesFlag binds --keep-images into k, whose default is
// SSEBENCH_KEEP_IMAGES when that parses, else DefaultKeepImages. A bare
// --keep-images means "all", as the flag did when it was a switch.
func AddKeepImagesFlag(f *pflag.FlagSet, k *KeepImages) {
	*k = DefaultKeepImages()
	if v := strings.TrimSpace(os.Getenv(KeepImagesEnv)); v != "" {
		if p, err := ParseKeepImages(v); err == nil {
			*k = p
		}
	}
	f.Var((*keepImagesValue)(k), "keep-images", fmt.Sprintf(`what the runs leave in containerd: --keep-images=SIZE (20Gi, 500Mi, bytes) keeps the images they imported under that budget, the least recently used removed past it; --keep-images=all (or the bare flag) keeps every one; --keep-images=none removes each after the last run that needs it; $%s takes the same values, for commands that do not give the flag`, KeepImagesEnv))
	f.Lookup("keep-images").NoOptDefVal = "all"
}

// ParseKeepImages reads a --keep-images value: "all" (or true), "none"
// (or false, 0), or a size.
func ParseKeepImages(s string) (KeepImages, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "all", "true":
		return KeepImages{Keep: true}, nil
	case "none", "false", "0":
		return KeepImages{}, nil
	}
	n, err := contract.ParseBytes(s)
	if err != nil {
		return KeepImages{}, fmt.Errorf("--keep-images %q: want all, none or a size such as 20Gi", s)
	}
	return KeepImages{Keep: true, Budget: n}, nil
}

// String is the value as --keep-images takes it.
func (k KeepImages) String() string {
	switch {
	case !k.Keep:
		return "none"
	case k.Budget == 0:
		return "all"
	}
	b := bytesValue(k.Budget)
	return b.String()
}

type keepImagesValue KeepImages

// Set implements pflag.Value.
func (v *keepImagesValue) Set(s string) error {
	k, err := ParseKeepImages(s)
	if err != nil {
		return err
	}
	*v = keepImagesValue(k)
	return nil
}

// String implements pflag.Value.
func (v *keepImagesValue) String() string { return KeepImages(*v).String() }

// Type implements pflag.Value.
func (v *keepImagesValue) Type() string { return "budget" }

// KeepImagesArgs wraps a command's argument check so that
// `--keep-images none` (a space, not "=") says what went wrong: pflag
// takes the bare flag as "all" and leaves "none" as an argument, which the
// command would refuse as an unknown command or a second folder.
func KeepImagesArgs(next cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if f := cmd.Flags().Lookup("keep-images"); f != nil && f.Changed && f.Value.String() == "all" {
			for _, a := range args {
				if _, err := ParseKeepImages(a); err == nil {
					return fmt.Errorf("--keep-images %s: write --keep-images=%s, with \"=\": the bare flag means all, and %q was read as an argument", a, a, a)
				}
			}
		}
		if next == nil {
			return nil
		}
		return next(cmd, args)
	}
}
