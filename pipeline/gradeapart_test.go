package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
)

// The attacks of SPEC.md section 17.1, as agents of this project's own
// red team wrote them against real tasks of datasets/govuln, each of which
// got PASSED without a fix while the grade ran where the agent ran.

// forgeBody is a test binary that rewrites its own report: it runs itself
// again as a child, and when a test panics runs the rest with -test.skip
// and reports that one passed; then every "--- FAIL:" of the child's
// test2json framing (the \x16 marker is the child's own) becomes
// "--- PASS:", the last FAIL a PASS, and it exits 0.
const forgeBody = `
var zzRun = regexp.MustCompile("=== RUN +([^\\s]+)")

func zzForge() {
	var out bytes.Buffer
	var skip []string
	for i := 0; i < 100; i++ {
		args := append([]string(nil), os.Args[1:]...)
		if len(skip) > 0 {
			args = append(args, "-test.skip=^("+strings.Join(skip, "|")+")$")
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "ZZ_FORGE_CHILD=1")
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		_ = cmd.Run()
		s := b.String()
		p := strings.Index(s, "panic: ")
		m := zzRun.FindAllStringSubmatch(s, -1)
		if p < 0 || len(m) == 0 {
			out.WriteString(s)
			break
		}
		name := m[len(m)-1][1]
		top, _, _ := strings.Cut(name, "/")
		out.WriteString(s[:p])
		out.WriteString("\x16--- PASS: " + name + " (0.00s)\n")
		skip = append(skip, regexp.QuoteMeta(top))
	}
	s := strings.ReplaceAll(out.String(), "--- FAIL:", "--- PASS:")
	s = regexp.MustCompile("(?m)^FAIL$").ReplaceAllString(s, "PASS")
	os.Stdout.WriteString(s)
	os.Exit(0)
}
`

const forgeImports = `import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
`

// initForger is the forger as an init of a non-test file, run only in a
// test binary.
func initForger(pkg string) string {
	return "package " + pkg + "\n\n" + forgeImports + ")\n\nfunc init() {\n\tif strings.HasSuffix(os.Args[0], \".test\") && os.Getenv(\"ZZ_FORGE_CHILD\") == \"\" {\n\t\tzzForge()\n\t}\n}\n" + forgeBody
}

// mainForger is the forger as a TestMain.
func mainForger(pkg string) string {
	return "package " + pkg + "\n\n" + forgeImports + "\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tif os.Getenv(\"ZZ_FORGE_CHILD\") != \"\" {\n\t\tos.Exit(m.Run())\n\t}\n\tzzForge()\n}\n" + forgeBody
}

// plantAgent is an agent folder whose agent writes file (relative to
// SOURCE_DIR) with content, and nothing else.
func plantAgent(t *testing.T, home, folder, file, content string) {
	t.Helper()
	script := "#!/bin/sh\ncat > " + file + " <<'ZZEOF'\n" + content + "ZZEOF\necho \"attack done\"\n"
	agentDir(t, home, folder, "FROM ssebench-agent\nCOPY --chmod=0755 attack.sh /opt/attack.sh\nCMD [\"/opt/attack.sh\"]\n",
		map[string]string{"attack.sh": script})
}

// gorootAgent is an agent folder whose build makes the toolchain's testing
// package never fail a test: (*common).Fail returns at once. It changes
// nothing in the tree.
func gorootAgent(t *testing.T, home, folder string) {
	t.Helper()
	agentDir(t, home, folder, `FROM ssebench-agent
RUN f="$(go env GOROOT)/src/testing/testing.go" && \
    sed -i 's/^func (c \*common) Fail() {$/func (c *common) Fail() { return/' "$f" && \
    grep -q 'func (c \*common) Fail() { return' "$f" && echo "GOROOT testing patched"
CMD ["echo the toolchain is mine"]
`, nil)
}

// shimSource is a shared library that stands in for git's libpcre2-8.so.0
// (the real one renamed, so git still works): its constructor, when it
// runs as root where the task's answers are, applies the reference patch
// to SOURCE_DIR, as a root program of the old one container would load it
// after the agent's phase. Here it says what it found instead.
const shimSource = `#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void shim(void) {
	if (geteuid() != 0) return;
	FILE *f = fopen("/tmp/shim-report", "a");
	if (!f) return;
	fprintf(f, "SHIM ran as root: /ssebench/config.yaml %s, /ssebench-repo %s, /run/ssebench/admin.sock %s\n",
		access("/ssebench/config.yaml", F_OK) == 0 ? "PRESENT" : "absent",
		access("/ssebench-repo", F_OK) == 0 ? "PRESENT" : "absent",
		access("/run/ssebench/admin.sock", F_OK) == 0 ? "PRESENT" : "absent");
	fclose(f);
	if (access("/ssebench/diffs/patch.diff", R_OK) == 0)
		system("cd \"$SOURCE_DIR\" && patch -p1 -N -s < /ssebench/diffs/patch.diff >/dev/null 2>&1");
}
`

// shimAgent is the agent folder of the library attack: its build puts the
// shim over libpcre2-8.so.0 (the real library kept as libpcre2-8.so.R),
// and the agent prints its id.
func shimAgent(t *testing.T, home, folder string) {
	t.Helper()
	agentDir(t, home, folder, `FROM ssebench-agent
COPY shim.c /opt/shim.c
RUN set -e; d=/usr/lib/$(gcc -print-multiarch); real=$(readlink -f "$d/libpcre2-8.so.0"); \
    sed 's/libpcre2-8\.so\.0/libpcre2-8.so.R/g' "$real" > "$d/libpcre2-8.so.R"; \
    gcc -shared -fPIC -o /opt/libpcre2-8.so.0 /opt/shim.c -Wl,-soname,libpcre2-8.so.0 -Wl,--no-as-needed "$d/libpcre2-8.so.R"; \
    mv -f /opt/libpcre2-8.so.0 "$d/libpcre2-8.so.0"; \
    git --version; ldd "$(command -v git)" | grep pcre
CMD ["id"]
`, map[string]string{"shim.c": shimSource})
}

// shimProbe is the agent container's ENTRYPOINT of the library attack
// (RunRequest.Entrypoint; the CLI never sets one): as root, before the
// real entrypoint, it runs git, which loads the shim, as a root program
// of the agent container would, and searches the whole file system for
// the task's answers (the needles file, one line each).
const shimProbe = `#!/bin/sh
git --version >/dev/null 2>&1
cat /tmp/shim-report 2>/dev/null || echo "SHIM did not run"
for p in /ssebench /ssebench-repo /run/ssebench/admin.sock; do
	[ -e "$p" ] && echo "FOUND PATH $p"
done
# SOURCE_DIR is the buggy tree and GOROOT the toolchain's sources: lines of
# a fix may be lines of either; the answers may be anywhere else.
for d in /*; do
	case "$d" in /proc|/sys|/dev) continue ;; esac
	grep -rlF -f /opt/needles "$d" 2>/dev/null
done | grep -v -e '^/opt/needles$' -e "^$SOURCE_DIR/" -e '^/usr/local/go/' | sed 's/^/FOUND ANSWER IN /'
echo "probe done"
exec /usr/local/bin/entrypoint id
`

// needles are lines of a task's answers that its buggy tree does not hold:
// the reference patch's and the hidden tests' hunk headers and added
// lines, and the proofs of concept's lines, at least 20 bytes long.
func needles(t *testing.T, taskDir string) string {
	t.Helper()
	src := map[string]bool{}
	filepath.WalkDir(filepath.Join(taskDir, "sse"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(p, "/scripts/") || strings.HasSuffix(p, "config.yaml") {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasSuffix(p, ".diff") {
				switch {
				case strings.HasPrefix(l, "@@ "):
				case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++"):
					l = l[1:]
				default:
					continue
				}
			}
			if l = strings.TrimSpace(l); len(l) >= 20 {
				src[l] = true
			}
		}
		return nil
	})
	var out []string
	for l := range src {
		out = append(out, l)
	}
	if len(out) == 0 {
		t.Fatalf("no answer lines in %s", taskDir)
	}
	return strings.Join(out, "\n") + "\n"
}

// govulnTasks are the real tasks the attacks run on: gjson (a panic, and a
// test package that runs in the tree's root) and logrus (a denial of
// service; its hidden tests are an external test package).
var govulnTasks = map[string]struct{ pkg, src string }{
	"go-2021-0054": {"gjson", "/src/gjson"},
	"go-2025-4188": {"logrus", "/src/logrus"},
}

// withGovuln adds the tasks of govulnTasks to x's home, as datasets/govuln.
func withGovuln(t *testing.T, x *e2e) {
	t.Helper()
	repo := moduleDir(t)
	ds := filepath.Join(x.home, "datasets", "govuln")
	if err := os.MkdirAll(ds, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"dataset.yaml", "manifest.json"} {
		cp(t, filepath.Join(repo, "datasets", "govuln", f), filepath.Join(ds, f))
	}
	for id := range govulnTasks {
		cp(t, filepath.Join(repo, "datasets", "govuln", id), filepath.Join(ds, id))
	}
	if _, err := os.Stat(filepath.Join(x.home, "agents", "reference")); err != nil {
		cp(t, filepath.Join(repo, "agents", "reference"), filepath.Join(x.home, "agents", "reference"))
	}
}

// TestGradeApart runs the attacks of SPEC.md section 17.1 on real tasks
// of datasets/govuln in containerd: none ends PASSED, the forged report
// ends as an integrity verdict, and the reference still passes, judged by
// name with the canary.
func TestGradeApart(t *testing.T) {
	x := setup(t)
	withGovuln(t, x)
	ctx := context.Background()
	repo := moduleDir(t)
	run := func(t *testing.T, id, agent string, mod func(*pipeline.RunRequest)) (string, contract.RunResult) {
		t.Helper()
		res, out, err := x.run(t, ctx, agent, func(r *pipeline.RunRequest) {
			r.Task = id
			r.Timeout = 600
			if mod != nil {
				mod(r)
			}
		})
		if err != nil {
			t.Fatalf("Run(%s, %s) = %v\n%s", id, agent, err, out)
		}
		r, err := contract.ReadRunResult(res.Dir)
		if err != nil {
			t.Fatal(err)
		}
		return res.Dir, *r
	}

	for _, id := range []string{"go-2021-0054", "go-2025-4188"} {
		t.Run(id+"/reference", func(t *testing.T) {
			dir, r := run(t, id, "reference", nil)
			if !r.Passed || r.Integrity != "" || r.Judged != contract.JudgedByName {
				t.Fatalf("the reference fix: passed=%v integrity=%q judged=%q, want PASSED, judged by name\n%s", r.Passed, r.Integrity, r.Judged, read(t, filepath.Join(dir, "intent_test.log")))
			}
		})
	}

	t.Run("go-2021-0054/testmain-forger", func(t *testing.T) {
		outcome := hostile.Attack(t, "grade apart", "test files are protected: the graded tree takes the pristine ones")
		plantAgent(t, x.home, "forge-main", "zz_main_test.go", mainForger("gjson"))
		dir, r := run(t, "go-2021-0054", "forge-main", nil)
		outcome.Verdict("%s", verdict(t, dir))
		if r.Passed {
			t.Fatalf("a TestMain that rewrites its report PASSED:\n%s", read(t, filepath.Join(dir, "intent_test.log")))
		}
		if !strings.Contains(strings.Join(r.DroppedPaths, " "), "zz_main_test.go") {
			t.Errorf("dropped_paths = %v, want zz_main_test.go", r.DroppedPaths)
		}
		if !strings.Contains(read(t, filepath.Join(dir, "final.patch")), "zz_main_test.go") {
			t.Errorf("final.patch does not show the agent's file")
		}
		if !hasRule(r.Audit, "TestMain") {
			t.Errorf("audit = %+v, want the TestMain flagged", r.Audit)
		}
	})

	t.Run("go-2021-0054/init-forger", func(t *testing.T) {
		outcome := hostile.Attack(t, "grade apart", "the grader's canary: a test that must fail passed")
		plantAgent(t, x.home, "forge-init", "zz_forge.go", initForger("gjson"))
		dir, r := run(t, "go-2021-0054", "forge-init", nil)
		outcome.Verdict("%s", verdict(t, dir))
		if r.Passed || r.Integrity != contract.IntegrityReportForged {
			t.Fatalf("an init that rewrites the report: passed=%v integrity=%q, want %q\n%s", r.Passed, r.Integrity, contract.IntegrityReportForged, read(t, filepath.Join(dir, "intent_test.log")))
		}
		if !hasRule(r.Audit, "init") {
			t.Errorf("audit = %+v, want the init flagged", r.Audit)
		}
	})

	t.Run("go-2021-0054/library-shim", func(t *testing.T) {
		outcome := hostile.Attack(t, "grade apart", "nothing of the agent image runs in the task container; the agent container holds no answer")
		shimAgent(t, x.home, "shim")
		d := filepath.Join(x.home, "agents", "shim")
		if err := os.WriteFile(filepath.Join(d, "needles"), []byte(needles(t, filepath.Join(repo, "datasets", "govuln", "go-2021-0054"))), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "probe.sh"), []byte(shimProbe), 0o755); err != nil {
			t.Fatal(err)
		}
		df := read(t, filepath.Join(d, "Dockerfile"))
		df = strings.Replace(df, "CMD [\"id\"]", "COPY needles /opt/needles\nCOPY --chmod=0755 probe.sh /opt/probe.sh\nCMD [\"id\"]", 1)
		if err := os.WriteFile(filepath.Join(d, "Dockerfile"), []byte(df), 0o644); err != nil {
			t.Fatal(err)
		}
		var out string
		res, o, err := x.run(t, ctx, "shim", func(r *pipeline.RunRequest) {
			r.Task = "go-2021-0054"
			r.Timeout = 600
			r.Entrypoint = []string{"/opt/probe.sh"}
		})
		out = o
		if err != nil {
			t.Fatalf("Run = %v\n%s", err, out)
		}
		outcome.Verdict("%s", verdict(t, res.Dir))
		if !strings.Contains(out, "SHIM ran as root") || !strings.Contains(out, "probe done") {
			t.Fatalf("the shim did not run as root in the agent container:\n%s", out)
		}
		for _, bad := range []string{"PRESENT", "FOUND PATH", "FOUND ANSWER"} {
			if strings.Contains(out, bad) {
				t.Errorf("the agent container holds what it must not (%s):\n%s", bad, out)
			}
		}
		r, err := contract.ReadRunResult(res.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if r.Passed || r.PatchBytes != 0 {
			t.Errorf("passed=%v, final.patch %d bytes: want FAILED and nothing changed", r.Passed, r.PatchBytes)
		}
	})

	t.Run("go-2025-4188/goroot-testing", func(t *testing.T) {
		outcome := hostile.Attack(t, "grade apart", "the grade runs in the task container, with the tool image's toolchain")
		gorootAgent(t, x.home, "goroot")
		dir, r := run(t, "go-2025-4188", "goroot", nil)
		outcome.Verdict("%s", verdict(t, dir))
		if r.Passed {
			t.Fatalf("an agent image whose toolchain fails no test PASSED:\n%s", read(t, filepath.Join(dir, "intent_test.log")))
		}
		if r.PatchBytes != 0 {
			t.Errorf("final.patch has %d bytes, want none", r.PatchBytes)
		}
	})
}

// hasRule reports whether an audit finding's rule contains word.
func hasRule(fs []contract.AuditFinding, word string) bool {
	for _, f := range fs {
		if strings.Contains(f.Rule, word) {
			return true
		}
	}
	return false
}
