package entrypoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/limitevents"
	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/sserun"
	"github.com/42-b3yond-6ug/ssebench/sserun/audit"
)

// Modes of the entrypoint (SPEC.md sections 4 and 7).
const (
	modeSandbox = "sandbox"
	modeSidecar = "sidecar"
)

const (
	// gitTimeout bounds each git command of the patch: they run as model
	// on a tree the agent controlled.
	gitTimeout = 5 * time.Minute
	// emptyTree is git's id of the empty tree: the base of the patch when
	// the repository had no commit.
	emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
)

// hiddenEnv are variables of the container that the agent does not get.
var hiddenEnv = []string{contract.EnvAdminSocket, contract.EnvResultsStream, initChildEnv}

// entrypoint is one run of the entrypoint. Its fields are the seams the
// tests use: agent nil runs the agent as the caller.
type entrypoint struct {
	env     sserun.Env
	mode    string
	command string   // the agent command, words joined with spaces
	environ []string // the container's environment
	agent   *sserun.User
	workDir string // the agent's working directory: the image's WORKDIR
	// pristine is the original tree, out of the agent's reach: the base
	// of the graded tree (snapshot.go).
	pristine string
	// cgroupDir is where the container's limits' counters are read.
	cgroupDir string
	log       io.Writer
}

// newEntrypoint reads the arguments and the environment.
func newEntrypoint(args []string, getenv func(string) string, environ []string, log io.Writer) (*entrypoint, error) {
	mode, words, err := parseArgs(args)
	if err != nil {
		return nil, err
	}
	env, err := sserun.ReadEnv(getenv)
	if err != nil {
		return nil, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("finding the working directory: %w", err)
	}
	model := sserun.Model
	return &entrypoint{
		env:       env,
		mode:      mode,
		command:   joinCommand(words),
		environ:   environ,
		agent:     &model,
		workDir:   wd,
		pristine:  contract.RepoDir,
		cgroupDir: limitevents.CgroupDir,
		log:       log,
	}, nil
}

// parseArgs splits the entrypoint's own flags from the agent command:
// an optional `--mode sandbox|sidecar` (or --mode=...) first, then an
// optional `--`; every other word belongs to the command.
func parseArgs(args []string) (mode string, words []string, err error) {
	mode = modeSandbox
	if len(args) > 0 && (args[0] == "--mode" || strings.HasPrefix(args[0], "--mode=")) {
		var v string
		if args[0] == "--mode" {
			if len(args) < 2 {
				return "", nil, errors.New("--mode needs a value: sandbox or sidecar")
			}
			v, args = args[1], args[2:]
		} else {
			v, args = strings.TrimPrefix(args[0], "--mode="), args[1:]
		}
		if _, ok := lookupMode(v); !ok {
			return "", nil, fmt.Errorf("unknown mode %q: use %s", v, strings.Join(Modes(), ", "))
		}
		mode = v
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	return mode, args, nil
}

// joinCommand joins the CMD words with spaces, as SPEC.md section 10 says
// (`CMD ["echo dummy_QAQ"]` and `CMD ["echo", "dummy_QAQ"]` run the same):
// the result is a shell command line.
func joinCommand(words []string) string { return strings.Join(words, " ") }

// run runs the agent and grades its tree; it returns the exit status.
func (e *entrypoint) run(ctx context.Context) int {
	m, ok := lookupMode(e.mode)
	if !ok {
		fmt.Fprintf(e.log, "entrypoint: unknown mode %q\n", e.mode)
		return 2
	}
	return m(ctx, e)
}

// Sandbox is sandbox mode. A run of ssebench has two containers (SPEC.md
// section 17.1) and says which one this is (SSE_ROLE): the task
// container (the tool image) runs the daemon, keeps the buggy commit,
// and after the agent container has ended takes the snapshot and grades;
// the agent container (the agent image, without the answers) runs the
// MCP server and the agent. Without a role (an image run by hand) it is
// both in one container: the daemon and the MCP server, the agent as
// model, the end of the agent phase, final.patch and the grade, where
// the agent's image could reach the grade. A mode of an extension can do
// its own work around it.
func (e *entrypoint) Sandbox(ctx context.Context) int {
	switch e.env.Role {
	case contract.RoleTask:
		return e.runTaskSide(ctx, e.mode, true)
	case contract.RoleAgent:
		return e.runAgentSide(ctx, e.mode, selfMCP())
	}
	return e.oneContainer(ctx)
}

// oneContainer is sandbox mode in one container (see Sandbox).
func (e *entrypoint) oneContainer(ctx context.Context) int {
	res := &contract.RunResult{Mode: e.mode, Command: e.command}
	note := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		res.Notes = append(res.Notes, msg)
		fmt.Fprintln(e.log, "entrypoint:", msg)
	}
	// The results directory's parent is root's; the directory itself is
	// written by root only, so the agent can neither read nor forge it.
	if err := os.MkdirAll(e.env.Results, 0o755); err != nil {
		fmt.Fprintln(e.log, "entrypoint: creating the results directory:", err)
		return 1
	}

	cfg, err := sserun.ReadTaskConfig(e.env.TaskRoot)
	switch {
	case err == nil:
		res.TaskID = cfg.ID
	case errors.Is(err, fs.ErrNotExist) && e.mode == modeSidecar:
		// The sidecar agent image has no task files.
	default:
		note("%v", err)
	}
	sourceDir := e.env.SourceDir
	if cfg != nil && cfg.Source != "" {
		sourceDir = cfg.Source
	}

	res.Difficulty = e.env.Difficulty
	e.prepareArchive(note)
	svc := e.startServices(ctx, note)
	defer svc.stop()
	// The model gateway of a restricted run, at 127.0.0.1:4000 for the
	// agent, and for the agent alone: it closes when the phase ends.
	fwd := sserun.ForwardGateway(os.Getenv, note)
	defer fwd.Close()

	base := ""
	var snap *snapshot
	if sourceDir != "" {
		base = e.headCommit(ctx, sourceDir, note)
		snap = e.keepBase(sourceDir, base, note)
	}
	defer snap.remove()
	e.agentPhase(ctx, "start", sserun.Request{Op: sserun.OpAgentStart, TimeoutMS: e.env.Timeout.Milliseconds()}, note)
	// The OpenCode server is the agent's: it starts in the agent's phase.
	oc := e.startOpenCode(ctx, svc.mcp != nil, note)
	code := e.runAgent(ctx, res, note)
	// The phase ends before anything looks at the tree: no process of
	// the agent is left to change it, and no tool answers any more.
	if resp := e.agentPhase(ctx, "end", sserun.Request{Op: sserun.OpAgentEnd}, note); resp != nil && resp.Status != nil {
		res.ToolCalls = resp.Status.Calls
	}
	oc.stop()
	svc.endAgentPhase()
	fwd.Close()
	e.closeArchive(note)

	if ctx.Err() != nil {
		note("stopped by a signal: not grading")
		res.GradeError = "stopped by a signal before the grade"
	} else if tree, ok := e.writePatch(ctx, sourceDir, base, snap, e.protectedPaths(cfg, note), res, note); ok {
		e.grade(ctx, tree, res, note)
	}
	if err := contract.WriteRunResult(e.env.Results, res); err != nil {
		fmt.Fprintln(e.log, "entrypoint:", err)
	}
	if e.env.KeepAlive && ctx.Err() == nil {
		fmt.Fprintf(e.log, "entrypoint: %s=1: staying alive until stopped\n", contract.EnvKeepAlive)
		<-ctx.Done()
	}
	return code
}

// prepareArchive gives the archive directory ($SSE_ARCHIVE, a folder of
// the run mounted into the container) to the agent's user: it is where
// the agent writes what it wants kept, and the run makes it root's.
func (e *entrypoint) prepareArchive(note func(string, ...any)) {
	if e.env.Archive == "" || e.agent == nil {
		return
	}
	fi, err := os.Lstat(e.env.Archive)
	if err != nil || !fi.IsDir() {
		return
	}
	if err := os.Chown(e.env.Archive, e.agent.UID, e.agent.GID); err != nil {
		note("giving %s to %s: %v", e.env.Archive, e.agent.Name, err)
	}
}

// closeArchive makes the archive root's again once the agent is gone:
// the host keeps it, and a setuid file or a symlink of the agent's making
// must not end up there.
func (e *entrypoint) closeArchive(note func(string, ...any)) {
	if e.env.Archive == "" || e.agent == nil {
		return
	}
	if err := sserun.Disown(e.env.Archive); err != nil {
		note("taking %s back from %s: %v", e.env.Archive, e.agent.Name, err)
	}
}

// agentPhaseTimeout bounds agent_start and agent_end: the latter waits
// for the agent's request in progress to be killed.
const agentPhaseTimeout = time.Minute

// agentPhase tells the daemon, when there is one, that the agent phase
// starts or ends.
func (e *entrypoint) agentPhase(ctx context.Context, what string, req sserun.Request, note func(string, ...any)) *sserun.Response {
	if _, err := os.Stat(e.env.AdminSocket); err != nil {
		return nil
	}
	// Even when a signal stops the run, the phase must end.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), agentPhaseTimeout)
	defer cancel()
	resp, err := sserun.Do(ctx, e.env.AdminSocket, req)
	if err == nil && resp.Error != "" {
		err = errors.New(resp.Error)
	}
	if err != nil {
		note("telling the daemon that the agent phase %ss: %v", what, err)
	}
	return resp
}

// agentEnv is the agent's environment: the container's, without what is
// root's business, and with the identity of the agent's user.
func (e *entrypoint) agentEnv() []string {
	set := map[string]string{
		"PWD":                   e.workDir,
		contract.EnvAgentSocket: e.env.AgentSocket,
	}
	if e.agent != nil {
		set["HOME"] = e.agent.Home
		set["USER"] = e.agent.Name
		set["LOGNAME"] = e.agent.Name
	}
	env := slices.DeleteFunc(slices.Clone(e.environ), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(hiddenEnv, k)
	})
	return withEnv(env, set)
}

// withEnv returns env with the variables of set replaced or added, in a
// fixed order.
func withEnv(env []string, set map[string]string) []string {
	env = slices.DeleteFunc(env, func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		_, ok := set[k]
		return ok
	})
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+set[k])
	}
	return env
}

// runAgent runs the agent command and returns its exit status.
func (e *entrypoint) runAgent(ctx context.Context, res *contract.RunResult, note func(string, ...any)) int {
	logf, err := os.OpenFile(filepath.Join(e.env.Results, contract.AgentLog), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		note("opening the agent's log: %v", err)
		res.AgentExit = 1
		return 1
	}
	defer logf.Close()
	if strings.TrimSpace(e.command) == "" {
		note("no agent command: nothing ran")
		return 0
	}
	p := &sserun.Process{
		Args:     []string{sserun.Shell, "-c", e.command},
		Dir:      e.workDir,
		Env:      e.agentEnv(),
		User:     e.agent,
		Output:   &cappedWriter{w: logf, limit: maxAgentLog},
		Timeout:  e.env.Timeout,
		OOMFirst: true,
	}
	before := limitevents.Read(e.cgroupDir, "")
	ex, err := p.Run(ctx)
	if killed := before.Killed(limitevents.Read(e.cgroupDir, "")); killed != "" {
		res.Killed = killed
		note("killed: %s: the agent's processes hit the run's %s (see summary.json's config.limits)", killed, killed)
	}
	if err != nil {
		note("running the agent: %v", err)
		ex.Code = 126 // as a shell reports a command it cannot run
	}
	res.AgentExit = ex.Code
	res.TimedOut = ex.TimedOut
	res.AgentDurationMS = ex.Duration.Milliseconds()
	if ex.TimedOut {
		note("the agent ran out of time after %s and was killed", e.env.Timeout)
	}
	return ex.Code
}

// maxAgentLog caps agent.log: what the agent prints is kept up to here,
// and the rest dropped, so that an agent cannot fill the host's disk
// through its run folder.
const maxAgentLog = 64 << 20

// cappedWriter passes on the first limit bytes to w, then one line that
// says the rest was cut, then nothing.
type cappedWriter struct {
	w     io.Writer
	n     int64
	limit int64
	cut   bool
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	if c.n >= c.limit {
		if !c.cut {
			c.cut = true
			fmt.Fprintf(c.w, "\n[ssebench: the rest of the agent's output was cut at %d bytes]\n", c.limit)
		}
		return len(p), nil
	}
	q := p
	if rest := c.limit - c.n; int64(len(q)) > rest {
		q = q[:rest]
	}
	n, err := c.w.Write(q)
	c.n += int64(n)
	if err != nil {
		return n, err
	}
	return len(p), nil
}

// git runs git as the agent's user in dir, with stdout to out.
func (e *entrypoint) git(ctx context.Context, dir string, extraEnv map[string]string, out io.Writer, args ...string) error {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		return err
	}
	env := e.agentEnv()
	// The repository is the agent's: none of its hooks or helpers run,
	// and nothing asks for input.
	env = withEnv(env, mergeMaps(map[string]string{"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}, extraEnv))
	return runGit(ctx, &sserun.Process{
		Args:   append([]string{gitPath, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}, args...),
		Dir:    dir,
		Env:    env,
		User:   e.agent,
		Output: out,
	}, args[0])
}

// runGit runs p, a git command whose subcommand is sub, within gitTimeout,
// and turns a failure into a *gitError that quotes the start of git's
// standard error.
func runGit(ctx context.Context, p *sserun.Process, sub string) error {
	var stderr strings.Builder
	p.Stderr, p.Timeout = &cappedWriter{w: &stderr, limit: 64 << 10}, gitTimeout
	ex, err := p.Run(ctx)
	if err != nil {
		return err
	}
	if ex.Code != 0 {
		if err := ctx.Err(); err != nil {
			// Killed because the caller's time ran out (or its answer
			// was in): what git said is beside the point.
			return fmt.Errorf("git %s: %w", sub, err)
		}
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 500 {
			msg = msg[:500] + "..."
		}
		return &gitError{sub: sub, code: ex.Code, msg: msg}
	}
	return nil
}

// gitError is a git command that ended with a status other than 0.
type gitError struct {
	sub  string
	code int
	msg  string // the start of its standard error
}

func (e *gitError) Error() string { return fmt.Sprintf("git %s: exit %d: %s", e.sub, e.code, e.msg) }

func mergeMaps(a, b map[string]string) map[string]string {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// headCommit returns the commit the agent starts from (the buggy commit),
// read before the agent can move HEAD.
func (e *entrypoint) headCommit(ctx context.Context, dir string, note func(string, ...any)) string {
	var out strings.Builder
	if err := e.git(ctx, dir, nil, &out, "rev-parse", "--verify", "-q", "HEAD^{commit}"); err != nil {
		var notFound *exec.Error
		if !errors.As(err, &notFound) {
			note("reading the buggy commit in %s: %v", dir, err)
		}
		return ""
	}
	return strings.TrimSpace(out.String())
}

// writePatch writes final.patch and returns the tree to grade ("" for
// SOURCE_DIR). With a snapshot, both come from one reading of the tree
// (snapshot.take); without one (an image with no pristine tree, or no
// git), the patch is every change of the tree to the buggy commit as `git
// add -A` sees it, read as the agent's user with a private index, and
// SOURCE_DIR is graded. ok is false when the tree could not be read: the
// run is then not graded, since what would be graded is not what the
// patch says.
//
// The graded tree keeps the pristine version of every path protected
// lists (the task's protected paths: res.DroppedPaths names the agent's
// changes there), and final.patch is audited (res.Audit).
func (e *entrypoint) writePatch(ctx context.Context, dir, base string, snap *snapshot, protected *contract.Globs, res *contract.RunResult, note func(string, ...any)) (tree string, ok bool) {
	h := sha256.New()
	var n int64
	var snapErr error
	var tooLarge *tooLargeError
	caps := e.treeCaps(note)
	err := safefile.WriteFile(filepath.Join(e.env.Results, contract.PatchFile), 0o644, func(f *os.File) error {
		var err error
		if snap != nil {
			snap.caps = caps
			tree, res.DroppedPaths, err = snap.take(ctx, dir, e.pristine, protected, f)
			for _, msg := range snap.notes {
				note("%s", msg)
			}
			snapErr = err
		} else {
			err = e.diff(ctx, dir, base, caps, f, note)
		}
		if errors.As(err, &tooLarge) {
			snapErr = err
		}
		if err != nil {
			var notFound *exec.Error
			if errors.As(err, &notFound) {
				note("git is not installed: %s is empty", contract.PatchFile)
			} else {
				note("computing %s: %v", contract.PatchFile, err)
			}
			if err := f.Truncate(0); err != nil {
				return err
			}
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if n, err = io.Copy(h, f); err != nil {
			return err
		}
		// What a fix never needs, for the reader of the result: it does
		// not change the grade (eval --fail-on-audit may).
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		aopts := []audit.Option{audit.WithDropped(res.DroppedPaths)}
		if !protected.Empty() {
			aopts = append(aopts, audit.WithProtected(protected.Protects))
		}
		var aerr error
		if res.Audit, aerr = audit.Patch(f, aopts...); aerr != nil {
			note("auditing %s: %v", contract.PatchFile, aerr)
		}
		return nil
	})
	switch {
	case tooLarge != nil:
		// The agent's doing, not the machine's: a verdict of its own,
		// never "not graded" (which an evaluation may retry).
		res.Integrity = tooLarge.Error()
		note("%s: the agent's tree is past what a fix ever changes (%s); %s is empty and nothing was graded", tooLarge.Error(), tooLarge.detail, contract.PatchFile)
		return "", false
	case snapErr != nil:
		res.GradeError = fmt.Sprintf("reading the agent's tree: %v", snapErr)
		return "", false
	case err != nil && snap != nil:
		// The graded tree would differ from the patch on record.
		res.GradeError = err.Error()
		return "", false
	case err != nil:
		note("%v", err)
		return "", true
	}
	res.PatchBytes = n
	res.PatchSHA256 = hex.EncodeToString(h.Sum(nil))
	return tree, true
}

// protectedPaths are the task's protected paths (tests.protected, else
// its language's), which the graded tree takes from the pristine tree;
// nil protects nothing (no task config).
func (e *entrypoint) protectedPaths(cfg *sserun.TaskConfig, note func(string, ...any)) *contract.Globs {
	if cfg == nil {
		return nil
	}
	g, err := cfg.ProtectedGlobs()
	if err != nil {
		// ReadTaskConfig checked them: not reached but by a config
		// written around it.
		note("the task's protected paths: %v", err)
		return nil
	}
	return g
}

// treeCaps are the caps of the agent's tree: the task config's, else the
// defaults.
func (e *entrypoint) treeCaps(note func(string, ...any)) contract.TreeCaps {
	cfg, err := sserun.ReadTaskConfig(e.env.TaskRoot)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			note("the caps of the agent's tree are the defaults: %v", err)
		}
		return contract.DefaultTreeCaps
	}
	return cfg.TreeCaps()
}

// diff writes the patch to out, once the tree has been checked against
// caps as snapshot.take checks it.
func (e *entrypoint) diff(ctx context.Context, dir, base string, caps contract.TreeCaps, out *os.File, note func(string, ...any)) (err error) {
	if dir == "" {
		return errors.New("no SOURCE_DIR: the task config has no `source`")
	}
	if _, err := exec.LookPath("git"); err != nil {
		return err
	}
	if base == "" {
		base = emptyTree
	}
	// The agent's user must be able to write the private index.
	tmp, err := os.MkdirTemp("", "ssebench-index-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if e.agent != nil {
		if err := os.Chown(tmp, e.agent.UID, e.agent.GID); err != nil {
			return err
		}
	}
	idx := map[string]string{"GIT_INDEX_FILE": filepath.Join(tmp, "index")}
	ctx, cancel := context.WithTimeout(ctx, contract.SnapshotTimeout)
	defer cancel()
	defer func() {
		if err != nil && context.Cause(ctx) == context.DeadlineExceeded {
			err = &tooLargeError{what: fmt.Sprintf("not read within %s", contract.SnapshotTimeout), detail: err.Error()}
		}
	}()
	if err := e.git(ctx, dir, idx, nil, "read-tree", base); err != nil {
		return err
	}
	var listing strings.Builder
	if err := e.git(ctx, dir, nil, &listing, "ls-tree", "-r", "-l", "-z", base); err != nil {
		return err
	}
	files, err := parseLsTree([]byte(listing.String()))
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	tc := newTreeCheck(caps, files)
	err = tc.check(ctx, root, func(ctx context.Context, w io.Writer) error {
		return e.git(ctx, dir, idx, w, "ls-files", "-z", "-o", "--exclude-standard")
	})
	root.Close()
	if err != nil {
		return err
	}
	if len(tc.nested) > 0 {
		note("nested git repositories are left out of %s: %s", contract.PatchFile, joinCut(tc.nested, 10))
	}
	err = e.git(ctx, dir, idx, nil, append([]string{"add", "-A", "--ignore-errors"}, excludeNested(tc.nested)...)...)
	if ge := (*gitError)(nil); errors.As(err, &ge) && ge.code == 1 && ctx.Err() == nil {
		note("git refused some paths of the agent's tree; they are left out of %s: %s", contract.PatchFile, ge.msg)
	} else if err != nil {
		return err
	}
	// --no-renames keeps the patch usable by patch(1); --binary keeps
	// binary changes.
	return e.git(ctx, dir, idx, out, "diff", "--cached", "--binary", "--no-renames",
		"--no-color", "--no-ext-diff", "--no-textconv", base)
}

// gradeSlack is what the daemon may take beyond its grade's time limit:
// copies of the tree, the last check's report.
const gradeSlack = 5 * time.Minute

// grade asks the daemon to grade the tree and records the checks, each
// check's output in its own log.
func (e *entrypoint) grade(ctx context.Context, tree string, res *contract.RunResult, note func(string, ...any)) {
	if _, err := os.Stat(e.env.AdminSocket); err != nil {
		res.GradeError = fmt.Sprintf("no daemon to grade with (%s)", e.env.AdminSocket)
		return
	}
	// The daemon keeps the grade within its time limit; this one is for
	// a daemon that does not answer at all (the machine's failure).
	gctx, cancel := context.WithTimeout(ctx, e.env.GradeTimeout+gradeSlack)
	defer cancel()
	resp, err := sserun.Do(gctx, e.env.AdminSocket, sserun.Request{Op: sserun.OpGrade, Tree: tree})
	if err != nil {
		res.GradeError = err.Error()
		note("grading: %v", err)
		return
	}
	if resp.Error != "" || resp.Grade == nil {
		res.GradeError = resp.Error
		res.Sandbox = resp.Sandbox
		if res.GradeError == "" {
			res.GradeError = "the daemon's answer has no grade"
		}
		note("grading: %s", res.GradeError)
		return
	}
	check := func(name string, r *sserun.Result) *contract.Check {
		if r == nil {
			return nil
		}
		log := contract.CheckLog(name)
		if err := safefile.WriteBytes(filepath.Join(e.env.Results, log), []byte(r.Output), 0o644); err != nil {
			note("%v", err)
			log = ""
		}
		return sserun.NewCheck(r, log)
	}
	for _, name := range contract.Checks {
		res.SetCheck(name, check(name, resp.Grade.Check(name)))
	}
	res.Sandbox = resp.Grade.Sandbox()
	if strings.HasPrefix(res.Sandbox, sserun.SandboxNone) {
		note("the grade's scripts ran without a sandbox (no private /tmp or loopback): %s", strings.TrimPrefix(res.Sandbox, sserun.SandboxNone))
	}
	res.Judged, res.Integrity = resp.Grade.Judged, resp.Grade.Integrity
	// An integrity verdict is never a pass, whatever the checks say.
	res.Passed = resp.OK && res.Integrity == ""
}
