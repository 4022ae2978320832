package accounts

import (
	"fmt"
	"strings"
)

// privilegedGroups are groups whose members can read secrets or become
// root on a Debian or Red Hat system, whatever gid the image gives them.
var privilegedGroups = map[string]bool{
	"root": true, "sudo": true, "wheel": true, "admin": true, "adm": true,
	"shadow": true, "disk": true, "kmem": true, "docker": true, "lxd": true,
	"staff": true, "sys": true, "systemd-journal": true,
}

// staticGIDs are the gids below 100 that Debian policy reserves for the
// groups base-passwd fixes (root, adm, disk, kmem, sudo, shadow, staff, …).
const staticGIDs = 100

// checkRunner refuses an existing sse-runner that would run the task's
// scripts with privileges: the tool layer keeps an existing sse-runner as
// useradd would (SPEC.md section 4 step 3), so one with uid 0, a uid
// another account has, or a privileged primary group must be fixed in the
// case image instead. Lines named sse-runner that shadow-utils cannot
// parse are refused too: glibc may still read them.
//
// Refusing (rather than recreating the account) keeps the rule the
// contract states and makes the case image's author see the problem.
func (s *state) checkRunner() error {
	var runner *passwdEntry
	for _, e := range s.passwd.entries {
		name, _, _ := strings.Cut(e.line, ":")
		if strings.TrimLeft(name, "+-") != RunnerName {
			continue
		}
		p, ok := e.rec.(*passwdEntry)
		if !ok || runner != nil {
			return fmt.Errorf("/etc/passwd line %d: a second or malformed entry for %s: leave one well-formed line, or none (the tool layer adds it)", e.lineNo, RunnerName)
		}
		runner = p
	}
	if runner == nil {
		return nil
	}
	fix := fmt.Sprintf("delete %s from the case image (the tool layer adds an unprivileged one)", RunnerName)
	switch {
	case runner.uid == 0:
		return fmt.Errorf("/etc/passwd: %s has uid 0, so the task's scripts would run as root: %s", RunnerName, fix)
	case runner.uid == ModelID:
		return fmt.Errorf("/etc/passwd: %s has uid %d, model's: %s", RunnerName, ModelID, fix)
	case runner.gid == 0 || runner.gid == ModelID || runner.gid < staticGIDs:
		return fmt.Errorf("/etc/passwd: %s has primary group %d, a privileged or shared one: %s", RunnerName, runner.gid, fix)
	}
	for _, r := range s.passwd.records() {
		if p := r.(*passwdEntry); p != runner && p.uid == runner.uid {
			return fmt.Errorf("/etc/passwd: %s shares uid %d with %q: %s", RunnerName, runner.uid, p.name, fix)
		}
	}
	for _, r := range s.group.records() {
		if g := r.(*groupEntry); g.gid == runner.gid && privilegedGroups[g.name] {
			return fmt.Errorf("/etc/passwd: %s's primary group %d is %q, a privileged group: %s", RunnerName, runner.gid, g.name, fix)
		}
	}
	return nil
}
