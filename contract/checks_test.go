package contract

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCheckAccessors checks that every name of Checks has a field of its
// own in RunResult, reached by Check and SetCheck, and that result.json
// calls that field by the same name: a check added to Checks without a
// place in RunResult (or under another JSON key) fails here.
func TestCheckAccessors(t *testing.T) {
	for i, name := range Checks {
		t.Run(name, func(t *testing.T) {
			var r RunResult
			c := &Check{Exit: i + 1, Log: CheckLog(name)}
			r.SetCheck(name, c)
			if got := r.Check(name); got != c {
				t.Fatalf("Check(%q) after SetCheck(%q, c) = %v, want c", name, name, got)
			}
			for _, other := range Checks {
				if other != name && r.Check(other) != nil {
					t.Errorf("SetCheck(%q) set Check(%q) too: the two share a field", name, other)
				}
			}
			data, err := json.Marshal(&r)
			if err != nil {
				t.Fatal(err)
			}
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(data, &keys); err != nil {
				t.Fatal(err)
			}
			var got Check
			if err := json.Unmarshal(keys[name], &got); err != nil || got.Exit != c.Exit {
				t.Errorf("result.json's %q = %s, want the check set by SetCheck(%q) (exit %d)", name, keys[name], name, c.Exit)
			}
		})
	}
}

// TestCheckUnknownName checks that a name not in Checks reaches no field:
// manifest.json's name of the test check is not result.json's.
func TestCheckUnknownName(t *testing.T) {
	for _, name := range []string{ManifestTestCheck, "", "Build", "grade"} {
		var r RunResult
		r.SetCheck(name, &Check{OK: true})
		if diff := cmp.Diff(RunResult{}, r); diff != "" {
			t.Errorf("SetCheck(%q) changed the result (-want +got):\n%s", name, diff)
		}
		if got := r.Check(name); got != nil {
			t.Errorf("Check(%q) = %v, want nil", name, got)
		}
	}
}

func TestChecksFor(t *testing.T) {
	tests := []struct {
		name string
		task TaskChecks
		want []string
	}{
		{"everything", TaskChecks{Build: true, Test: true, Run: true, PoCs: true, FutureTest: true}, Checks},
		{"nothing", TaskChecks{}, nil},
		{"build and test", TaskChecks{Build: true, Test: true}, []string{CheckBuild, CheckTest}},
		{"run without proofs of concept", TaskChecks{Build: true, Test: true, Run: true}, []string{CheckBuild, CheckTest}},
		{"proofs of concept without run", TaskChecks{Build: true, Test: true, PoCs: true}, []string{CheckBuild, CheckTest}},
		{"hidden tests without test script", TaskChecks{Build: true, Run: true, PoCs: true, FutureTest: true}, []string{CheckBuild, CheckPoC}},
		{"no build", TaskChecks{Test: true, FutureTest: true}, []string{CheckTest, CheckIntentTest}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ChecksFor(tt.task)); diff != "" {
				t.Errorf("ChecksFor(%+v) mismatch (-want +got):\n%s", tt.task, diff)
			}
		})
	}
}

// TestResultMatches: a listed name names a test by its bare name in any
// group, or by group.name exactly; nothing else matches, however the
// parts line up.
func TestResultMatches(t *testing.T) {
	r := TestResult{Name: "TestX/sub", Group: "example.com/m/p"}
	for listed, want := range map[string]bool{
		"TestX/sub":                  true,
		"example.com/m/p.TestX/sub":  true,
		"example.com/m/p.TestX":      false,
		"example.com/m/pxTestX/sub":  false,
		"example.com/m.p.TestX/sub":  false,
		"example.com/m/p.TestX/sub2": false,
		"xexample.com/m/p.TestX/sub": false,
		".TestX/sub":                 false,
		"example.com/m/p.":           false,
		"":                           false,
		"example.com/m/p.TestX/sub ": false,
	} {
		if got := r.Matches(listed); got != want {
			t.Errorf("Matches(%q) = %v, want %v", listed, got, want)
		}
	}
	if (TestResult{Name: "TestX"}).Matches(".TestX") {
		t.Error("a test without a group matches .TestX")
	}
}
