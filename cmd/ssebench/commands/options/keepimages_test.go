package options

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/42-b3yond-6ug/ssebench/runner"
)

// TestKeepImages: --keep-images takes a budget, all (the bare flag, as
// when it was a switch) or none; the default keeps images under
// runner.DefaultImageBudget, and SSEBENCH_KEEP_IMAGES changes it. A
// value goes after "=", as for a boolean flag: the bare flag means all.
func TestKeepImages(t *testing.T) {
	for _, tc := range []struct {
		env  string
		args []string
		want KeepImages
		str  string
	}{
		{args: nil, want: KeepImages{Keep: true, Budget: runner.DefaultImageBudget}, str: "20Gi"},
		{args: []string{"--keep-images"}, want: KeepImages{Keep: true}, str: "all"},
		{args: []string{"--keep-images=none"}, want: KeepImages{}, str: "none"},
		{args: []string{"--keep-images=false"}, want: KeepImages{}, str: "none"},
		{args: []string{"--keep-images=500Mi"}, want: KeepImages{Keep: true, Budget: 500 << 20}, str: "500Mi"},
		{env: "none", want: KeepImages{}, str: "none"},
		{env: "2Gi", args: []string{"--keep-images=all"}, want: KeepImages{Keep: true}, str: "all"},
		{env: "nonsense", want: KeepImages{Keep: true, Budget: runner.DefaultImageBudget}, str: "20Gi"},
	} {
		t.Setenv(KeepImagesEnv, tc.env)
		f := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var k KeepImages
		AddKeepImagesFlag(f, &k)
		if err := f.Parse(tc.args); err != nil {
			t.Errorf("env %q %q: %v", tc.env, tc.args, err)
			continue
		}
		if k != tc.want || k.String() != tc.str {
			t.Errorf("env %q %q = %+v (%s), want %+v (%s)", tc.env, tc.args, k, k, tc.want, tc.str)
		}
	}
	f := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var k KeepImages
	AddKeepImagesFlag(f, &k)
	if err := f.Parse([]string{"--keep-images=lots"}); err == nil {
		t.Error("--keep-images lots was accepted")
	}
}

// TestKeepImagesArgs: `--keep-images none` with a space is told how to
// write it, not refused as an unknown command; other arguments reach the
// command's own check.
func TestKeepImagesArgs(t *testing.T) {
	run := func(args ...string) error {
		var k KeepImages
		cmd := &cobra.Command{Use: "grade", Args: KeepImagesArgs(cobra.NoArgs), RunE: func(*cobra.Command, []string) error { return nil }}
		AddKeepImagesFlag(cmd.Flags(), &k)
		cmd.SetArgs(args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		return cmd.Execute()
	}
	if err := run("--keep-images", "none"); err == nil || !strings.Contains(err.Error(), "write --keep-images=none") {
		t.Errorf("--keep-images none = %v, want the hint to write --keep-images=none", err)
	}
	if err := run("--keep-images", "extra"); err == nil || !strings.Contains(err.Error(), `unknown command "extra"`) {
		t.Errorf("--keep-images extra = %v, want the command's own refusal", err)
	}
	if err := run("--keep-images=none"); err != nil {
		t.Errorf("--keep-images=none = %v", err)
	}
	if err := run("--keep-images"); err != nil {
		t.Errorf("bare --keep-images = %v", err)
	}
}
