package sserun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// Shell runs the task's scripts: `/bin/sh SCRIPT [POC]`, so that a script
// needs neither an execute bit nor a #! line.
const Shell = "/bin/sh"

// DefaultOutputLimit is how much of a script's output a Result keeps: the
// end, where compilers and test runners say what failed.
const DefaultOutputLimit = 1 << 20

// scrubbedEnv are variables of the container that the task's scripts must
// not see: the build runs the agent's code, which could print them.
var scrubbedEnv = []string{"SSE_API_KEY", contract.EnvAdminSocket, contract.EnvResultsStream}

// Daemon runs a task's scripts on copies of the agent's tree, one request
// at a time. It implements Handler for Serve.
//
// Each request gets a scratch directory under the work directory:
//
//	ssebench-run-XXXX/   owner root, group of the runner, 0750
//	  sse/               root, 0755: the scripts' folders and, for poc and
//	                     grade, the proofs of concept (read-only copies)
//	  work/              the runner, 0700
//	    src/             the copy of SOURCE_DIR (the scripts' working directory)
//	    home/, tmp/      HOME and TMPDIR of the scripts
//
// The agent cannot enter it; the runner can read the scripts but cannot
// change or replace them (the top directory is root's), so code the agent
// wrote cannot change how a later check of the same grade is run. The
// directory is removed when the request ends.
//
// OpAgentEnd, or a grade, ends the agent phase: the agent's request in
// progress is cancelled (its script killed), and the agent socket refuses
// every later request but ping, so that the agent cannot hold up or follow
// its grade. OpAgentEnd also kills every process of the agent's user.
type Daemon struct {
	mu   sync.Mutex // one request at a time: scripts share the runner's uid
	cfg  *TaskConfig
	root string
	o    daemonOptions

	// agentDone ends the agent's session; agentCtx is done after it.
	agentCtx  context.Context
	agentDone context.CancelFunc
	// noSandbox is, under mu, why the last script could not have its
	// sandbox (and so did not run); "" when it had it or did not need it.
	noSandbox string

	// statMu guards what status reports; it is never held while a
	// script runs, so status answers during a build.
	statMu   sync.Mutex
	started  time.Time // the agent's start; zero before OpAgentStart
	deadline time.Time // zero: no limit
	ended    bool
	calls    map[string]int
	ncalls   int
}

var _ Handler = (*Daemon)(nil)

// DaemonOption configures NewDaemon.
type DaemonOption func(*daemonOptions) error

type daemonOptions struct {
	sourceDir     string
	workDir       string
	runner        *User
	scriptTimeout time.Duration
	outputLimit   int
	env           []string
	log           io.Writer
	difficulty    int
	agentUser     *User
	toolLog       io.Writer
	pristine      string
	// protected are the task's protected paths (TaskConfig.ProtectedGlobs),
	// set by NewDaemon; nil when there is no pristine tree to take them
	// from.
	protected *contract.Globs
	// gradeTimeout bounds a whole grade.
	gradeTimeout time.Duration
	// allowNoSandbox lets scripts run without their sandbox where the
	// machine refuses it.
	allowNoSandbox bool
	// extraKeep is added to each sandbox's Keep (tests: a directory that
	// is not there makes the helper give up, as a refusal does).
	extraKeep []string
}

// WithSourceDir sets the tree the scripts run on, the agent's SOURCE_DIR.
// The default value is the config's `source`.
func WithSourceDir(dir string) DaemonOption {
	return func(o *daemonOptions) error {
		if !filepath.IsAbs(dir) {
			return fmt.Errorf("SOURCE_DIR %q is not an absolute path", dir)
		}
		o.sourceDir = dir
		return nil
	}
}

// WithGradeTimeout bounds a whole grade, every check together: a check
// still running when it passes is killed and fails as timed out, and the
// checks after it are skipped, so that the agent's code in a check cannot
// hold the run past its own deadline and leave it with no grade at all.
// The default value is contract.DefaultGradeTimeout.
func WithGradeTimeout(d time.Duration) DaemonOption {
	return func(o *daemonOptions) error {
		if d <= 0 {
			return fmt.Errorf("grade timeout %v is not positive", d)
		}
		o.gradeTimeout = d
		return nil
	}
}

// WithAllowNoSandbox lets the scripts (the agent's tools and the grade's
// checks) run without their sandbox where the kernel or the container
// runtime refuses it; result.json's sandbox then says "none: " and why.
// Without it such a script does not run: a tool call fails, and a grade
// ends with an error that names `--allow-no-sandbox`, since the agent's
// code would share /tmp and the loopback interface with the agent's
// processes. The default is false.
func WithAllowNoSandbox(allow bool) DaemonOption {
	return func(o *daemonOptions) error { o.allowNoSandbox = allow; return nil }
}

// withExtraKeep adds dirs to each sandbox's Keep (tests).
func withExtraKeep(dirs ...string) DaemonOption {
	return func(o *daemonOptions) error { o.extraKeep = dirs; return nil }
}

// WithWorkDir sets where scratch directories are made. It must be a
// directory the runner can reach (not /var/lib/ssebench, which is root's
// alone). The default value is os.TempDir().
func WithWorkDir(dir string) DaemonOption {
	return func(o *daemonOptions) error { o.workDir = dir; return nil }
}

// WithRunner sets the account scripts run as. The default value, nil,
// runs them as the daemon's own user, which is only right in tests.
func WithRunner(u *User) DaemonOption {
	return func(o *daemonOptions) error { o.runner = u; return nil }
}

// WithScriptTimeout bounds each script run. The default value is
// DefaultScriptTimeout.
func WithScriptTimeout(d time.Duration) DaemonOption {
	return func(o *daemonOptions) error {
		if d <= 0 {
			return fmt.Errorf("script timeout %v is not positive", d)
		}
		o.scriptTimeout = d
		return nil
	}
}

// WithOutputLimit sets how many bytes of output a Result keeps (the last
// ones). The default value is DefaultOutputLimit.
func WithOutputLimit(n int) DaemonOption {
	return func(o *daemonOptions) error {
		if n <= 0 {
			return fmt.Errorf("output limit %d is not positive", n)
		}
		o.outputLimit = n
		return nil
	}
}

// WithEnv sets the environment the scripts start from (the container's);
// the daemon removes secrets from it and sets HOME, TMPDIR, USER, LOGNAME,
// PWD and SOURCE_DIR. The default value is os.Environ().
func WithEnv(env []string) DaemonOption {
	return func(o *daemonOptions) error { o.env = slices.Clone(env); return nil }
}

// WithLog sets where the daemon logs one line per request. The default
// value discards the log.
func WithLog(w io.Writer) DaemonOption {
	return func(o *daemonOptions) error { o.log = w; return nil }
}

// WithDifficulty sets the difficulty level, 0 to MaxDifficulty: what
// task_info tells and what poc answers on the agent socket (see
// TaskInfoFor). The default value is DefaultDifficulty.
func WithDifficulty(level int) DaemonOption {
	return func(o *daemonOptions) error {
		if level < 0 || level > MaxDifficulty {
			return fmt.Errorf("difficulty %d is not 0 to %d", level, MaxDifficulty)
		}
		o.difficulty = level
		return nil
	}
}

// WithAgentUser sets the agent's account, whose every process OpAgentEnd
// kills. The default value, nil, kills nothing, which is only right in
// tests: the daemon must be root to kill another user's processes.
func WithAgentUser(u *User) DaemonOption {
	return func(o *daemonOptions) error {
		if u != nil && u.UID == 0 {
			return errors.New("the agent's user must not be root")
		}
		o.agentUser = u
		return nil
	}
}

// WithToolLog sets where each tool call on the agent socket is recorded,
// one JSON object per line (ToolCall): tool_calls.jsonl in the results
// directory. The default value discards the records.
func WithToolLog(w io.Writer) DaemonOption {
	return func(o *daemonOptions) error { o.toolLog = w; return nil }
}

// WithPristine sets the pristine tree, out of the agent's reach, from
// which every copy of the tree the scripts get takes the task's protected
// paths (TaskConfig.ProtectedPaths: test files, test data, vendored code).
// "" takes none; so does a directory that does not exist, which NewDaemon
// logs. The default value is contract.RepoDir.
func WithPristine(dir string) DaemonOption {
	return func(o *daemonOptions) error {
		if dir != "" && !filepath.IsAbs(dir) {
			return fmt.Errorf("pristine tree %q is not an absolute path", dir)
		}
		o.pristine = dir
		return nil
	}
}

// NewDaemon returns a daemon for the task whose files are under root
// (/ssebench) and whose config is cfg.
func NewDaemon(root string, cfg *TaskConfig, opts ...DaemonOption) (*Daemon, error) {
	o := daemonOptions{
		sourceDir:     cfg.Source,
		workDir:       os.TempDir(),
		scriptTimeout: DefaultScriptTimeout,
		outputLimit:   DefaultOutputLimit,
		env:           os.Environ(),
		log:           io.Discard,
		difficulty:    DefaultDifficulty,
		toolLog:       io.Discard,
		pristine:      contract.RepoDir,
		gradeTimeout:  contract.DefaultGradeTimeout,
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	protected, err := cfg.ProtectedGlobs()
	if err != nil {
		return nil, fmt.Errorf("reading the task's protected paths: %w", err)
	}
	if o.pristine != "" && !protected.Empty() {
		if fi, err := os.Stat(o.pristine); err != nil || !fi.IsDir() {
			fmt.Fprintf(o.log, "%s no pristine tree at %s: the scripts' copies keep the agent's changes to protected paths (%s)\n",
				time.Now().UTC().Format(time.RFC3339), o.pristine, strings.Join(protected.Patterns(), ", "))
		} else {
			o.protected = protected
		}
	}
	if o.sourceDir == "" {
		return nil, errors.New("no SOURCE_DIR: the task config has no `source`, and none was given")
	}
	d := &Daemon{cfg: cfg, root: root, o: o, calls: map[string]int{}}
	d.agentCtx, d.agentDone = context.WithCancel(context.Background())
	return d, nil
}

// Handle implements Handler: it answers ping, tools, task_info and status
// at once, runs build, test, poc and (on the admin socket only) grade one
// at a time, and takes agent_start and agent_end on the admin socket. Each
// tool call on the agent socket is recorded in the tool log.
func (d *Daemon) Handle(ctx context.Context, req Request, admin bool) Response {
	start := time.Now()
	resp := d.handle(ctx, req, admin)
	if tool := ToolOf(req.Op); tool != "" && !admin {
		d.record(req, tool, resp, start)
	}
	return resp
}

func fail(format string, args ...any) Response {
	return Response{Result: Result{Exit: -1}, Error: fmt.Sprintf(format, args...)}
}

// errPhaseOver is the answer to the agent once its phase is over.
const errPhaseOver = "the agent phase is over: the run is being graded, and no more tool calls are taken"

func (d *Daemon) handle(ctx context.Context, req Request, admin bool) Response {
	op := req.Op
	scripts := d.cfg.Scripts
	if !admin && op != OpPing && d.agentCtx.Err() != nil {
		return fail(errPhaseOver)
	}
	switch op {
	case OpPing:
		return Response{Result: Result{OK: true, Output: "pong"}}
	case OpTools:
		return Response{Result: Result{OK: true}, Tools: Tools(d.cfg, d.o.difficulty), Status: d.status()}
	case OpTaskInfo:
		info, err := TaskInfoFor(d.root, d.cfg, d.o.sourceDir, d.o.difficulty)
		if err != nil {
			return fail("%v", err)
		}
		return Response{Result: Result{OK: true, Output: info.Text()}, Info: info}
	case OpStatus:
		st := d.status()
		return Response{Result: Result{OK: true, Output: st.text()}, Status: st}
	case OpAgentStart, OpAgentEnd:
		if !admin {
			return fail("%q is only accepted on the admin socket", op)
		}
		if op == OpAgentStart {
			return d.agentStart(req.TimeoutMS)
		}
		return d.agentEnd()
	case OpBuild:
		if scripts.Build == "" {
			return fail("the task has no build script")
		}
	case OpTest:
		if scripts.Test == "" {
			return fail("the task has no test script")
		}
	case OpPoC:
		if scripts.Run == "" || len(d.cfg.Files.PoC) == 0 {
			return fail("the task has no proof of concept to run")
		}
		if !admin && !pocsAllowed(d.cfg, d.o.difficulty) {
			return fail("run_pocs is not available at difficulty %d", d.o.difficulty)
		}
	case OpGrade:
		if !admin {
			return fail("%q is only accepted on the admin socket", op)
		}
	default:
		return fail("unknown op %q: use one of %s", op, strings.Join([]string{OpPing, OpTaskInfo, OpBuild, OpTest, OpPoC, OpStatus}, ", "))
	}

	if op == OpGrade {
		d.endPhase()
	} else if !admin {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(d.agentCtx, cancel)
		defer stop()
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if !admin && d.agentCtx.Err() != nil {
		// The phase ended while this request waited its turn.
		return fail(errPhaseOver)
	}
	start := time.Now()
	tree := d.o.sourceDir
	if op == OpGrade && req.Tree != "" {
		tree = req.Tree // admin only: checked above
	}
	resp := d.run(ctx, op, tree)
	if op == OpPoC && !admin {
		// The agent's code ran with the proofs of concept in hand: what
		// the level does not show must not come back in the answer.
		switch {
		case d.o.difficulty == MaxDifficulty-1:
			resp = passFailOnly(resp)
		case d.o.difficulty > 0:
			resp = d.hidePoCs(resp)
		}
	}
	fmt.Fprintf(d.o.log, "%s %s (admin=%t): ok=%t exit=%d in %s%s\n",
		time.Now().UTC().Format(time.RFC3339), op, admin, resp.OK, resp.Exit,
		time.Since(start).Round(time.Millisecond), errSuffix(resp.Error))
	return resp
}

// passFailOnly keeps of a poc answer whether each proof of concept passed,
// as difficulty 3 allows: no output, no exit status, no file names, and
// no duration or time-out, which the agent's code in the run would set
// as it pleased (a run that sleeps N ms says N): one bit per proof of
// concept is what it can send back.
func passFailOnly(r Response) Response {
	out := Response{Result: Result{OK: r.OK}, Error: r.Error}
	if !r.OK {
		out.Exit = 1
	}
	var b strings.Builder
	for i, p := range r.PoCs {
		name := fmt.Sprintf("PoC %d", i+1)
		state := "pass"
		if !p.OK {
			state = "fail"
		}
		fmt.Fprintf(&b, "%s: %s\n", name, state)
		out.PoCs = append(out.PoCs, PoCResult{Name: name, OK: p.OK})
	}
	out.Output = b.String()
	return out
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

func (d *Daemon) run(ctx context.Context, op, tree string) Response {
	start := time.Now()
	s, err := d.newScratch(op == OpPoC || op == OpGrade, tree)
	if err != nil {
		return Response{Result: Result{Exit: -1}, Error: fmt.Sprintf("preparing a copy of the tree: %v", err)}
	}
	defer s.remove()
	var r Result
	switch op {
	case OpBuild:
		r = d.script(ctx, s, d.cfg.Scripts.Build)
	case OpTest:
		r = d.testScript(ctx, s, "")
	case OpPoC:
		var pocs []PoCResult
		r, pocs = d.pocs(ctx, s)
		return Response{Result: r, PoCs: pocs}
	case OpGrade:
		return d.grade(ctx, s, start)
	}
	return Response{Result: r}
}

// grade runs every check that applies (contract.ChecksFor, in its order)
// on one copy of the tree, the hidden tests on a copy of their own.
// Everything after the build is skipped when the build fails: it would only
// fail again, slowly.
func (d *Daemon) grade(ctx context.Context, s *scratch, start time.Time) Response {
	var g Grade
	c := d.cfg
	sum := Result{OK: true}
	var parts []string
	verdicts := map[string]testVerdict{}
	buildFailed := false
	// Not a context deadline: a script the deadline stops must be timed
	// out (its own Timeout), not cancelled.
	deadline := start.Add(d.o.gradeTimeout)
	ctx = context.WithValue(ctx, gradeDeadlineKey{}, deadline)
	for _, name := range contract.ChecksFor(d.taskChecks()) {
		var r Result
		switch {
		case buildFailed:
			r = Result{Exit: -1, Skipped: "the build failed"}
		case !time.Now().Before(deadline):
			r = Result{Exit: -1, Skipped: fmt.Sprintf("the grade's time limit of %s passed", d.o.gradeTimeout)}
		case name == contract.CheckBuild:
			r = d.script(ctx, s, c.Scripts.Build)
			buildFailed = !r.OK
		case name == contract.CheckTest:
			// The hidden tests are not applied here: only the tests that
			// pass with and without them are judged by name.
			var v testVerdict
			r, v = d.testCheck(ctx, s, contract.CheckTest, NamedList{"pass_to_pass", c.Tests.PassToPass})
			verdicts[contract.CheckTest] = v
		case name == contract.CheckPoC:
			r, _ = d.pocs(ctx, s)
		case name == contract.CheckIntentTest:
			var v testVerdict
			var ran bool
			if r, v, ran = d.intentTest(ctx, s); ran {
				verdicts[contract.CheckIntentTest] = v
			}
		default:
			// A check contract.Checks gained that the daemon cannot run
			// yet: failing it beats passing a grade that left it out.
			r = Result{Exit: -1, Output: fmt.Sprintf("the daemon does not know how to run the %s check\n", name)}
		}
		if d.noSandbox != "" {
			// The machine's doing, not the agent's: no grade.
			return Response{Result: Result{Exit: -1, Sandbox: SandboxNone + d.noSandbox}, Error: noSandboxMessage(d.noSandbox)}
		}
		g.setCheck(name, &r)
		if !r.OK && sum.OK {
			sum.OK = false
			sum.Exit = r.Exit
		}
		state := "ok"
		switch {
		case r.Skipped != "":
			state = "skipped"
		case !r.OK && r.Failed != "":
			state = "failed (" + r.Failed + ")"
		case !r.OK:
			state = fmt.Sprintf("failed (exit %d)", r.Exit)
		}
		parts = append(parts, name+": "+state)
	}
	g.Judged, g.Integrity = d.judged(verdicts)
	if g.Integrity != "" {
		sum.OK = false
		parts = append(parts, "integrity: "+g.Integrity)
	}
	sum.DurationMS = time.Since(start).Milliseconds()
	sum.Output = strings.Join(parts, "\n")
	return Response{Result: sum, Grade: &g}
}

// taskChecks says which of the scripts and files that decide the grade's
// checks the task has (task.Config.Checks asks the same of config.yaml).
func (d *Daemon) taskChecks() contract.TaskChecks {
	c := d.cfg
	return contract.TaskChecks{
		Build:      c.Scripts.Build != "",
		Test:       c.Scripts.Test != "",
		Run:        c.Scripts.Run != "",
		PoCs:       len(c.Files.PoC) > 0,
		FutureTest: c.Files.FutureTest != "",
	}
}

// intentTest applies the task's future_test diff (the hidden tests) to a
// fresh copy of the agent's tree and runs the test script there. A diff
// that does not apply (the agent changed the lines it touches) fails the
// check. The script gets the home and temporary directory of the grade's
// own copy, where the build left its caches (Go's build cache is in HOME):
// it then compiles only what the diff changed. ran is false when the test
// script did not run.
func (d *Daemon) intentTest(ctx context.Context, grade *scratch) (_ Result, _ testVerdict, ran bool) {
	file := d.cfg.Files.FutureTest
	patch, err := os.ReadFile(filepath.Join(d.root, filepath.FromSlash(file)))
	if err != nil {
		return Result{Exit: -1, Output: fmt.Sprintf("reading %s: %v\n", file, err)}, testVerdict{}, false
	}
	s, err := d.newScratch(false, grade.from)
	if err != nil {
		return Result{Exit: -1, Output: fmt.Sprintf("preparing a copy of the tree: %v\n", err)}, testVerdict{}, false
	}
	defer s.remove()
	s.home, s.tmp = grade.home, grade.tmp
	uid, gid := d.runnerIDs()
	if err := applyDiff(patch, s.src, uid, gid); err != nil {
		return Result{Exit: -1, Output: fmt.Sprintf("%s does not apply to the agent's tree: %v\n", file, err)}, testVerdict{}, false
	}
	t := d.cfg.Tests
	r, v := d.testCheck(ctx, s, contract.CheckIntentTest, NamedList{"fail_to_pass", t.FailToPass}, NamedList{"pass_to_pass", t.PassToPass})
	return r, v, true
}

// pocs runs the run script once per proof of concept, with the copy's
// path as its argument. It passes when every run exits 0; Exit is the
// first failing run's status.
func (d *Daemon) pocs(ctx context.Context, s *scratch) (Result, []PoCResult) {
	sum := Result{OK: true}
	var out strings.Builder
	var each []PoCResult
	for _, poc := range d.cfg.Files.PoC {
		r := d.script(ctx, s, d.cfg.Scripts.Run, filepath.Join(s.sse, filepath.FromSlash(poc)))
		each = append(each, PoCResult{Name: poc, OK: r.OK, Exit: &r.Exit})
		fmt.Fprintf(&out, "=== %s: exit %d\n%s", poc, r.Exit, r.Output)
		if !strings.HasSuffix(r.Output, "\n") && r.Output != "" {
			out.WriteByte('\n')
		}
		sum.DurationMS += r.DurationMS
		sum.TimedOut = sum.TimedOut || r.TimedOut
		if !r.OK && sum.OK {
			sum.OK = false
			sum.Exit = r.Exit
		}
	}
	t := newTailBuffer(d.o.outputLimit)
	_, _ = t.Write([]byte(out.String()))
	sum.Output, sum.OutputCut = t.String(), t.cut()
	return sum, each
}

// script runs one task script in the copy of the tree.
func (d *Daemon) script(ctx context.Context, s *scratch, script string, args ...string) Result {
	out := newTailBuffer(d.o.outputLimit)
	// A private /tmp and loopback, and none of the agent's folders (the
	// script works on the scratch's copy): the agent's code in the script
	// hands nothing to the agent's processes that way. Only root can set
	// one up for another user; a daemon that is not root runs everything
	// as one user anyway.
	var sandbox *Sandbox
	if d.o.runner != nil {
		sandbox = &Sandbox{Keep: append([]string{s.top, s.home, s.tmp}, d.o.extraKeep...), Hide: []string{d.o.sourceDir}, Required: !d.o.allowNoSandbox}
		if d.o.agentUser != nil {
			sandbox.Hide = append(sandbox.Hide, d.o.agentUser.Home)
		}
	}
	// The script's share of the grade's time limit, when the grade has
	// one: a script killed at it is timed out, as at its own.
	timeout, gradeLimited := d.o.scriptTimeout, false
	if dl, ok := ctx.Value(gradeDeadlineKey{}).(time.Time); ok && time.Until(dl) < timeout {
		timeout, gradeLimited = max(time.Until(dl), time.Millisecond), true
	}
	p := &Process{
		Args:    append([]string{Shell, filepath.Join(s.sse, filepath.FromSlash(script))}, args...),
		Dir:     s.src,
		Env:     d.scriptEnv(s),
		User:    d.o.runner,
		Output:  out,
		Timeout: timeout,
		Sandbox: sandbox,
		// The script runs the agent's code: when the container runs out
		// of memory, that code dies, not the daemon, whose death would
		// leave the run with no grade.
		OOMFirst: true,
	}
	ex, err := p.Run(ctx)
	d.noSandbox = ""
	if errors.Is(err, ErrNoSandbox) {
		d.noSandbox = strings.TrimPrefix(ex.Sandbox, SandboxNone)
		return Result{Exit: -1, Output: noSandboxMessage(d.noSandbox) + "\n", Sandbox: ex.Sandbox}
	}
	if err != nil {
		return Result{Exit: -1, Output: err.Error()}
	}
	r := Result{
		OK:         ex.Code == 0 && !ex.TimedOut,
		Exit:       ex.Code,
		Output:     out.String(),
		OutputCut:  out.cut(),
		DurationMS: ex.Duration.Milliseconds(),
		TimedOut:   ex.TimedOut,
		Sandbox:    ex.Sandbox,
	}
	switch {
	case ex.TimedOut && gradeLimited:
		r.Output += fmt.Sprintf("\n[ssebench: %s was killed when the grade's time limit of %s ran out]\n", script, d.o.gradeTimeout)
	case ex.TimedOut:
		r.Output += fmt.Sprintf("\n[ssebench: %s was killed after %s]\n", script, d.o.scriptTimeout)
	}
	return r
}

// gradeDeadlineKey is the context key of a grade's deadline, which its
// scripts' time limits stop at.
type gradeDeadlineKey struct{}

// noSandboxMessage says why a script did not run: the machine refused
// its sandbox, and how to run it anyway.
func noSandboxMessage(why string) string {
	return fmt.Sprintf("the task's scripts cannot run in their sandbox on this machine (%s): the agent's code would share /tmp and the loopback interface with the agent; pass --allow-no-sandbox to grade without it (result.json then says sandbox: none)", why)
}

func (d *Daemon) scriptEnv(s *scratch) []string {
	name := d.runnerName()
	set := map[string]string{
		"HOME": s.home, "TMPDIR": s.tmp, "USER": name, "LOGNAME": name,
		"PWD": s.src, contract.EnvSourceDir: s.src,
	}
	env := make([]string, 0, len(d.o.env)+len(set))
	for _, kv := range d.o.env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; ok || k == EnvTestReport || slices.Contains(scrubbedEnv, k) {
			continue
		}
		env = append(env, kv)
	}
	for _, k := range []string{"HOME", "TMPDIR", "USER", "LOGNAME", "PWD", contract.EnvSourceDir} {
		env = append(env, k+"="+set[k])
	}
	if s.report != "" {
		env = append(env, EnvTestReport+"="+s.report)
	}
	return env
}

func (d *Daemon) runnerName() string {
	if d.o.runner != nil {
		return d.o.runner.Name
	}
	return os.Getenv("USER")
}

// runnerIDs returns the uid and gid the copies of the tree get.
func (d *Daemon) runnerIDs() (int, int) {
	if d.o.runner != nil {
		return d.o.runner.UID, d.o.runner.GID
	}
	return os.Getuid(), os.Getgid()
}

type scratch struct {
	top, sse, src, home, tmp string
	// report is where the test script writes its test report
	// ($SSE_TEST_REPORT), in report/, outside the tree; empty when
	// the task has no tests.format.
	report string
	from   string // the tree src is a copy of
}

func (s *scratch) remove() { _ = os.RemoveAll(s.top) }

// newScratch makes a scratch directory as the Daemon doc describes.
func (d *Daemon) newScratch(withPoC bool, tree string) (_ *scratch, retErr error) {
	top, err := os.MkdirTemp(d.o.workDir, "ssebench-run-")
	if err != nil {
		return nil, err
	}
	s := &scratch{
		top:  top,
		sse:  filepath.Join(top, "sse"),
		src:  filepath.Join(top, "work", "src"),
		home: filepath.Join(top, "work", "home"),
		tmp:  filepath.Join(top, "work", "tmp"),
		from: tree,
	}
	defer func() {
		if retErr != nil {
			s.remove()
		}
	}()
	// Until the end, top is 0700 and root's: nobody else sees a half-made
	// copy.
	me := copyOpts{uid: os.Getuid(), gid: os.Getgid(), readOnly: true}
	if err := os.Mkdir(s.sse, 0o755); err != nil {
		return nil, err
	}
	for _, rel := range d.taskFiles(withPoC) {
		if err := copyTree(d.root, s.sse, rel, me); err != nil {
			return nil, err
		}
	}
	uid, gid := d.runnerIDs()
	runner := copyOpts{uid: uid, gid: gid}
	dirs := []string{filepath.Dir(s.src), s.src, s.home, s.tmp}
	if d.cfg.Tests.Format != "" {
		// Below top, which is root's: the runner cannot swap the folder
		// for a symlink to what the daemon must not read.
		s.report = filepath.Join(top, "report", "tests.out")
		dirs = append(dirs, filepath.Dir(s.report))
	}
	for _, dir := range dirs {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return nil, err
		}
		if err := os.Lchown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	// Only what the tree's owner (the agent) can read goes into the copy.
	fi, err := os.Stat(tree)
	if err != nil {
		return nil, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		runner.reader = &[2]int{int(st.Uid), int(st.Gid)}
	}
	// Every copy, for the agent's build, test and run_pocs tools as for
	// the grade (and the hidden tests' copy), takes the protected paths
	// from the pristine tree: each tool then answers for the tree the
	// grade will see, and a build or proof of concept that passes only
	// through an edited vendored package or test helper does not tell the
	// agent its fix works. The agent can still run its own tests in its
	// own container. Each file is copied once, from one tree or the
	// other, so a large vendor/ costs no more than before.
	if d.o.protected != nil {
		runner.skip = d.o.protected.Match
	}
	if err := copyTree(tree, s.src, ".", runner); err != nil {
		return nil, err
	}
	if d.o.protected != nil {
		if err := copyProtected(d.o.pristine, s.src, d.o.protected, copyOpts{uid: uid, gid: gid, skipGit: true}); err != nil {
			return nil, err
		}
	}
	if err := os.Lchown(top, os.Getuid(), gid); err != nil {
		return nil, err
	}
	if err := os.Chmod(top, 0o750); err != nil {
		return nil, err
	}
	return s, nil
}

// taskFiles lists what a scratch copy holds of the task root: the folder
// of each script, because scripts call and source their siblings
// (`"$(dirname "$0")/build.sh"`), or the script alone when it lies at the
// top, next to the reference patch and hidden tests; and the proofs of
// concept when they are needed. Nothing else: the build runs the agent's
// code, which can read what the runner can.
func (d *Daemon) taskFiles(withPoC bool) []string {
	var out []string
	for _, s := range []string{d.cfg.Scripts.Build, d.cfg.Scripts.Test, d.cfg.Scripts.Run} {
		if s == "" {
			continue
		}
		if dir := path.Dir(s); dir != "." {
			s = dir
		}
		out = append(out, s)
	}
	if withPoC {
		out = append(out, d.cfg.Files.PoC...)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	// A folder already copied holds what lies below it.
	var kept []string
	for _, p := range out {
		if !slices.ContainsFunc(out, func(q string) bool { return strings.HasPrefix(p, q+"/") }) {
			kept = append(kept, p)
		}
	}
	return kept
}
