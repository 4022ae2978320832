package pipeline_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/hostile"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
)

// redTeam is an agent written to cheat, not to fix: each one attacks the
// grade a different way (docs/images.md, "What the agent must not
// reach"). Every one must end not PASSED.
type redTeam struct {
	class, name string
	script      string // the agent's program, run as model in SOURCE_DIR
	// planted is what the script prints when a step of the attack worked
	// that must not: the test fails on seeing it.
	planted string
	// withFix gives the agent the task's own fix at /opt/fix.diff: an
	// attacker that has it, and tries to have it applied outside its
	// phase, where nothing records it.
	withFix bool
	// limits, when set, are the run's (--memory, --pids, --cpus), and
	// killed the limit result.json must say the agent hit.
	limits *contract.Limits
	killed string
	// notRun, when set, are lines intent_test.log must have: the check
	// failed, naming the hidden tests that did not run.
	notRun []string
}

// redTeams are the attacks the tool image and the grader must stop.
var redTeams = []redTeam{
	{
		class: "red team: toolchain shadowing",
		name:  "shadow-go",
		// The Go base image makes GOPATH 1777 and puts /go/bin first on
		// PATH, as upstream does: a go that "passes" everything, planted
		// there, would be what the grader's scripts run.
		script: `#!/bin/sh
printf '#!/bin/sh\necho "ok  \tfake\t0.001s"\nexit 0\n' >/tmp/fake-go
chmod 0755 /tmp/fake-go
for d in $(echo "$PATH" | tr ':' ' ') /go/bin /usr/local/go/bin; do
	cp /tmp/fake-go "$d/go" 2>/dev/null && echo "PLANTED $d/go"
done
mkdir /go/pkg/mod/example.com 2>/dev/null && echo "PLANTED a module directory in GOPATH"
echo "attack done"
`,
		planted: "PLANTED",
	},
	{
		class: "red team: after the phase",
		name:  "git-clean-filter",
		// Nothing in its phase but a clean filter in its own repository:
		// the old entrypoint ran `git add -A` as model after the phase to
		// write final.patch, the filter applied the fix then, the grade
		// passed, and final.patch was empty.
		script: `#!/bin/sh
git config filter.x.clean 'sh -c "patch -p1 -N -s -d /src/kvconf < /opt/fix.diff >/dev/null 2>&1; cat"'
mkdir -p .git/info
echo '* filter=x' > .git/info/attributes
echo '* filter=x' > .gitattributes
echo "attack done"
`,
		withFix: true,
	},
	{
		class: "red team: resources",
		name:  "memory-hog",
		// 64 GiB through a pipe that tail holds whole (no newline ever
		// comes): the run's memory limit kills tail, not the machine.
		script: `#!/bin/sh
head -c 68719476736 /dev/zero | tail >/dev/null
echo "attack done"
`,
		limits: &contract.Limits{MemoryBytes: 512 << 20, Pids: 512, CPUs: 1},
		killed: contract.KilledMemory,
	},
	{
		class: "red team: resources",
		name:  "fork-bomb",
		script: `#!/bin/sh
bomb() { bomb | bomb & }
bomb
i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done
echo "attack done"
`,
		limits: &contract.Limits{MemoryBytes: 1 << 30, Pids: 256, CPUs: 1},
		killed: contract.KilledPids,
	},
	{
		class: "red team: hidden tests forged",
		name:  "init-exit-0",
		// The test script runs the agent's code: an init that ends every
		// test binary with status 0 before a test runs made go test say
		// ok, and intent_test passed on the exit code.
		script: `#!/bin/sh
cat >zz_init.go <<'EOF'
package kvconf

import (
	"os"
	"strings"
)

func init() {
	if strings.HasSuffix(os.Args[0], ".test") {
		os.Exit(0)
	}
}
EOF
echo "attack done"
`,
		notRun: []string{"fail_to_pass TestParseErrors/short_hex_escape: did not run"},
	},
	{
		class: "red team: hidden tests forged",
		name:  "testmain-no-run",
		// A TestMain that returns without m.Run: no test runs, and the
		// binary exits 0.
		script: `#!/bin/sh
cat >zz_main_test.go <<'EOF'
package kvconf

import "testing"

func TestMain(m *testing.M) {}
EOF
echo "attack done"
`,
		notRun: []string{"fail_to_pass TestParseErrors/short_hex_escape: did not run"},
	},
}

// testRedTeam runs each red-team agent on the example task.
func testRedTeam(t *testing.T, x *e2e) {
	ctx := context.Background()
	for _, rt := range redTeams {
		t.Run(rt.name, func(t *testing.T) {
			hostile.Case(t, rt.class)
			files := map[string]string{"attack.sh": rt.script}
			dockerfile := "FROM ssebench-agent\nCOPY --chmod=0755 attack.sh /opt/attack.sh\nCMD [\"/opt/attack.sh\"]\n"
			if rt.withFix {
				files["fix.diff"] = read(t, filepath.Join(moduleDir(t), "datasets", "examples", e2eTask, "sse", "diffs", "patch.diff"))
				dockerfile += "COPY fix.diff /opt/fix.diff\n"
			}
			agentDir(t, x.home, "redteam-"+rt.name, dockerfile, files)
			res, out, err := x.run(t, ctx, "redteam-"+rt.name, func(r *pipeline.RunRequest) {
				r.Resources = rt.limits
				if rt.limits != nil {
					r.Timeout = 60
				}
			})
			if err != nil {
				t.Fatalf("Run() = %v\n%s", err, out)
			}
			log := read(t, filepath.Join(res.Dir, "agent.log"))
			// A memory limit may kill the attack's shell with its pipe:
			// then only the limit's report says how far it got.
			if rt.killed != contract.KilledMemory && !strings.Contains(log, "attack done") {
				t.Fatalf("the attack did not run to its end:\n%s", log)
			}
			if rt.planted != "" && strings.Contains(log, rt.planted) {
				t.Errorf("the attack got through a step it must not:\n%s", log)
			}
			var got struct {
				Killed string `json:"killed"`
			}
			if err := json.Unmarshal([]byte(read(t, filepath.Join(res.Dir, "result.json"))), &got); err != nil {
				t.Fatal(err)
			}
			if got.Killed != rt.killed {
				t.Errorf("result.json's killed = %q, want %q\nagent.log:\n%.2000s", got.Killed, rt.killed, log)
			}
			r := readResult(t, res.Dir)
			if r.Passed {
				t.Errorf("result.json says PASSED for an agent that fixed nothing: %+v\nagent.log:\n%s", r, log)
			}
			if len(rt.notRun) > 0 {
				if r.IntentTest == nil || r.IntentTest.OK {
					t.Errorf("intent_test = %+v, want it failed: the hidden tests did not run", r.IntentTest)
				} else {
					it := read(t, filepath.Join(res.Dir, "intent_test.log"))
					for _, want := range rt.notRun {
						if !strings.Contains(it, want) {
							t.Errorf("intent_test.log does not say %q:\n%s", want, it)
						}
					}
				}
			}
			// Whatever was graded is what final.patch says: an agent that
			// changed nothing in its phase has an empty patch and a tree
			// that still has the bug.
			if patch := read(t, filepath.Join(res.Dir, "final.patch")); rt.withFix && strings.Contains(patch, "unquote.go") {
				t.Errorf("final.patch has a change the agent did not make in its phase:\n%s", patch)
			}
		})
	}
}
