package accounts

import (
	"fmt"
	"path"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// Names, ids and paths that SPEC.md section 4 step 3 fixes.
const (
	ModelName   = contract.ModelName
	ModelID     = contract.ModelUID
	ModelHome   = contract.ModelHome
	ModelShell  = contract.ModelShell
	RunnerName  = contract.RunnerName
	RunnerHome  = contract.RunnerHome
	RunnerShell = contract.RunnerShell
)

// Files holds the account files of an image, as bytes. A nil slice means
// the file does not exist (and, in a Result, must keep not existing); an
// empty non-nil slice is an empty file.
type Files struct {
	Passwd    []byte // /etc/passwd
	Group     []byte // /etc/group
	Shadow    []byte // /etc/shadow
	Gshadow   []byte // /etc/gshadow
	LoginDefs []byte // /etc/login.defs, read only
	Subuid    []byte // /etc/subuid
	Subgid    []byte // /etc/subgid
}

// Removal is a path that userdel -r deletes: a deleted user's mail spool or
// home directory. userdel deletes it (a home with everything below it) only
// when it exists and stat(2), which follows symbolic links, says UID owns
// it; the caller checks that against the image and whites it out.
type Removal struct {
	Path string // absolute and clean
	UID  int    // the deleted user's uid
}

// Result is what Rewrite computes.
type Result struct {
	// Files holds the new contents; LoginDefs is the input, unchanged.
	Files Files
	// Remove lists, per deleted user in passwd order, the mail spool then
	// the home directory.
	Remove []Removal
	// DeletedUsers and DeletedGroups name what was deleted, in order
	// (groups userdel took along with their user included).
	DeletedUsers  []string
	DeletedGroups []string
	// RunnerUID and RunnerGID are sse-runner's ids: allocated when the
	// user was added, else the existing entry's.
	RunnerUID, RunnerGID int
}

// Rewrite applies SPEC.md section 4 step 3 to the account files in, the way
// the shadow-utils sequence in the package documentation would. WithDay is
// required. It fails where that sequence would fail (for example two
// entries of one name that it must edit, a group sse-runner without a user
// sse-runner, or no free system id); such errors name the file and line.
func Rewrite(in Files, opts ...Option) (*Result, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	if in.Passwd == nil {
		return nil, fmt.Errorf("/etc/passwd is missing")
	}
	if in.Group == nil {
		return nil, fmt.Errorf("/etc/group is missing")
	}
	s, err := load(in)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	if err := s.run(o, res); err != nil {
		return nil, err
	}
	res.Files = s.files(in)
	return res, nil
}

// state is the account database while the sequence runs. A nil db is a
// file that does not exist.
type state struct {
	passwd, group, shadow, gshadow, subuid, subgid *db
	defs                                           loginDefs
}

func load(in Files) (*state, error) {
	s := &state{defs: parseLoginDefs(in.LoginDefs)}
	var err error
	load := func(name string, data []byte, parse func(string) record) *db {
		if data == nil || err != nil {
			return nil
		}
		var d *db
		d, err = parseDB(name, data, parse)
		return d
	}
	s.passwd = load("/etc/passwd", in.Passwd, parsePasswd)
	s.group = load("/etc/group", in.Group, parseGroup)
	s.shadow = load("/etc/shadow", in.Shadow, parseShadow)
	s.gshadow = load("/etc/gshadow", in.Gshadow, parseGshadow)
	s.subuid = load("/etc/subuid", in.Subuid, parseSubid)
	s.subgid = load("/etc/subgid", in.Subgid, parseSubid)
	return s, err
}

func (s *state) files(in Files) Files {
	out := func(d *db) []byte {
		if d == nil {
			return nil
		}
		return d.bytes()
	}
	return Files{
		Passwd:    out(s.passwd),
		Group:     out(s.group),
		Shadow:    out(s.shadow),
		Gshadow:   out(s.gshadow),
		LoginDefs: in.LoginDefs,
		Subuid:    out(s.subuid),
		Subgid:    out(s.subgid),
	}
}

func (s *state) run(o *options, res *Result) error {
	// userdel -r, for every user with uid 1000 or named model.
	var doomed []*passwdEntry
	for _, r := range s.passwd.records() {
		if p := r.(*passwdEntry); p.uid == ModelID || p.name == ModelName {
			doomed = append(doomed, p)
		}
	}
	for _, p := range doomed {
		if err := s.userdel(p, res); err != nil {
			return fmt.Errorf("deleting user %q: %w", p.name, err)
		}
	}
	// groupdel -f, for every group with gid 1000 or named model.
	var groups []string
	for _, r := range s.group.records() {
		if g := r.(*groupEntry); g.gid == ModelID || g.name == ModelName {
			groups = append(groups, g.name)
		}
	}
	for _, name := range groups {
		if err := s.groupdel(name); err != nil {
			return fmt.Errorf("deleting group %q: %w", name, err)
		}
		res.DeletedGroups = append(res.DeletedGroups, name)
	}
	if err := s.addModel(o.day); err != nil {
		return fmt.Errorf("adding user %q: %w", ModelName, err)
	}
	if err := s.clearGroups(ModelName); err != nil {
		return fmt.Errorf("clearing the groups of %q: %w", ModelName, err)
	}
	if err := s.checkRunner(); err != nil {
		return err
	}
	if r := s.passwd.lookup(RunnerName); r != nil {
		p := r.(*passwdEntry)
		res.RunnerUID, res.RunnerGID = int(p.uid), int(p.gid)
	} else {
		uid, gid, err := s.addRunner(o.day)
		if err != nil {
			return fmt.Errorf("adding user %q: %w", RunnerName, err)
		}
		res.RunnerUID, res.RunnerGID = int(uid), int(gid)
	}
	if err := s.clearGroups(RunnerName); err != nil {
		return fmt.Errorf("clearing the groups of %q: %w", RunnerName, err)
	}
	return nil
}

// userdel is `userdel -r`: update_user, update_groups (with
// remove_usergroup when USERGROUPS_ENAB), then the mail spool and the home.
func (s *state) userdel(p *passwdEntry, res *Result) error {
	if err := s.passwd.remove(p.name); err != nil {
		return err
	}
	if s.shadow != nil {
		if err := s.shadow.remove(p.name); err != nil {
			return err
		}
	}
	for _, d := range []*db{s.subuid, s.subgid} {
		if d == nil {
			continue
		}
		kept := d.entries[:0]
		for _, e := range d.entries {
			if e.rec == nil || e.rec.(*subidEntry).owner != p.name {
				kept = append(kept, e)
			}
		}
		d.entries = kept
	}
	if err := s.dropMember(p.name, true); err != nil {
		return err
	}
	if s.defs.bool("USERGROUPS_ENAB") {
		if err := s.removeUserGroup(p, res); err != nil {
			return err
		}
	}
	res.DeletedUsers = append(res.DeletedUsers, p.name)
	if spool := s.mailSpool(p.name); spool != "" {
		res.Remove = append(res.Remove, Removal{Path: spool, UID: int(p.uid)})
	}
	if home := path.Clean(p.home); path.IsAbs(home) && home != "/" {
		// "/" is left out: no layer can delete the root.
		res.Remove = append(res.Remove, Removal{Path: home, UID: int(p.uid)})
	}
	return nil
}

// removeUserGroup is userdel's remove_usergroup: the group named like the
// user goes when it is the user's primary group, has no members left and
// is no other user's primary group.
func (s *state) removeUserGroup(p *passwdEntry, res *Result) error {
	r := s.group.lookup(p.name)
	if r == nil {
		return nil
	}
	g := r.(*groupEntry)
	if g.gid != p.gid || len(g.members) > 0 {
		return nil
	}
	for _, o := range s.passwd.records() {
		if q := o.(*passwdEntry); q.name != p.name && q.gid == g.gid {
			return nil
		}
	}
	if err := s.groupdel(g.name); err != nil {
		return err
	}
	res.DeletedGroups = append(res.DeletedGroups, g.name)
	return nil
}

// mailSpool is the path remove_mailbox deletes: MAIL_DIR/name, with
// /var/mail when neither MAIL_DIR nor MAIL_FILE is set.
func (s *state) mailSpool(name string) string {
	dir, ok := s.defs.str("MAIL_DIR")
	if !ok {
		if _, ok := s.defs.str("MAIL_FILE"); ok {
			return ""
		}
		dir = "/var/mail"
	}
	p := path.Clean(dir + "/" + name)
	if !path.IsAbs(p) {
		return ""
	}
	return p
}

// groupdel is `groupdel -f`: the group and its gshadow entry go; member
// lists and primary groups elsewhere are left alone.
func (s *state) groupdel(name string) error {
	if err := s.group.remove(name); err != nil {
		return err
	}
	if s.gshadow != nil {
		return s.gshadow.remove(name)
	}
	return nil
}

// dropMember removes name from every group's members, and from gshadow's
// members (and, when admins is set, administrators), rewriting only the
// entries that change. userdel drops both; usermod -G "" only members.
func (s *state) dropMember(name string, admins bool) error {
	for _, e := range s.group.entries {
		if e.rec == nil {
			continue
		}
		g := e.rec.(*groupEntry)
		if m, found := delList(g.members, name); found {
			g.members, e.changed = m, true
		}
	}
	if s.gshadow == nil {
		return nil
	}
	for _, e := range s.gshadow.entries {
		if e.rec == nil {
			continue
		}
		g := e.rec.(*gshadowEntry)
		if m, found := delList(g.members, name); found {
			g.members, e.changed = m, true
		}
		if !admins {
			continue
		}
		if a, found := delList(g.admins, name); found {
			g.admins, e.changed = a, true
		}
	}
	return nil
}

// clearGroups is `usermod -G "" name`.
func (s *state) clearGroups(name string) error {
	return s.dropMember(name, false)
}

// addModel is `groupadd -g 1000 model` then
// `useradd -u 1000 -g 1000 -M -d /home/model -s /bin/bash model`.
func (s *state) addModel(day int64) error {
	// groupadd writes "x" as the group password even without gshadow.
	if err := s.group.update(&groupEntry{name: ModelName, passwd: "x", gid: ModelID}); err != nil {
		return err
	}
	if s.gshadow != nil {
		if err := s.gshadow.update(&gshadowEntry{name: ModelName, passwd: "!"}); err != nil {
			return err
		}
	}
	if err := s.passwd.update(&passwdEntry{
		name: ModelName, passwd: s.passwdField(), uid: ModelID, gid: ModelID,
		home: ModelHome, shell: ModelShell,
	}); err != nil {
		return err
	}
	if s.shadow != nil {
		sp := newShadow(ModelName, day,
			s.defs.num("PASS_MIN_DAYS", -1), s.defs.num("PASS_MAX_DAYS", -1), s.defs.num("PASS_WARN_AGE", -1))
		if err := s.shadow.update(sp); err != nil {
			return err
		}
	}
	// Subordinate ids go to users in UID_MIN..UID_MAX only.
	uidMin, uidMax := s.defs.id("UID_MIN", 1000), s.defs.id("UID_MAX", 60000)
	if ModelID < uidMin || ModelID > uidMax {
		return nil
	}
	for _, sub := range []struct {
		d    *db
		what string
	}{{s.subuid, "UID"}, {s.subgid, "GID"}} {
		count := s.defs.ulong("SUB_"+sub.what+"_COUNT", 65536)
		if sub.d == nil || count == 0 {
			continue
		}
		start, err := findFreeSubidRange(sub.d,
			s.defs.ulong("SUB_"+sub.what+"_MIN", 100000), s.defs.ulong("SUB_"+sub.what+"_MAX", 600100000), count, sub.what)
		if err != nil {
			return err
		}
		sub.d.appendEntry(&subidEntry{owner: ModelName, start: start, count: count})
	}
	return nil
}

// addRunner is `useradd --system --user-group -d /nonexistent
// -s /usr/sbin/nologin sse-runner`.
func (s *state) addRunner(day int64) (uid, gid uint32, err error) {
	if r := s.group.lookup(RunnerName); r != nil {
		return 0, 0, fmt.Errorf("group %q exists without a user of that name, so useradd --user-group refuses it; delete the group in the case image", RunnerName)
	}
	uidMin := s.defs.id("SYS_UID_MIN", 101)
	uidMax := s.defs.id("SYS_UID_MAX", uint64(s.defs.id("UID_MIN", 1000))-1)
	usedUIDs := map[uint32]bool{}
	for _, r := range s.passwd.records() {
		usedUIDs[r.(*passwdEntry).uid] = true
	}
	if uid, err = findSystemID(usedUIDs, uidMin, uidMax, nil); err != nil {
		return 0, 0, fmt.Errorf("choosing a uid: %w", err)
	}
	gidMin := s.defs.id("SYS_GID_MIN", 101)
	gidMax := s.defs.id("SYS_GID_MAX", uint64(s.defs.id("GID_MIN", 1000))-1)
	usedGIDs := map[uint32]bool{}
	for _, r := range s.group.records() {
		usedGIDs[r.(*groupEntry).gid] = true
	}
	if gid, err = findSystemID(usedGIDs, gidMin, gidMax, &uid); err != nil {
		return 0, 0, fmt.Errorf("choosing a gid: %w", err)
	}
	// useradd's own group gets "!" as its password without gshadow.
	grPasswd := "!"
	if s.gshadow != nil {
		grPasswd = "x"
	}
	if err := s.group.update(&groupEntry{name: RunnerName, passwd: grPasswd, gid: gid}); err != nil {
		return 0, 0, err
	}
	if s.gshadow != nil {
		if err := s.gshadow.update(&gshadowEntry{name: RunnerName, passwd: "!"}); err != nil {
			return 0, 0, err
		}
	}
	if err := s.passwd.update(&passwdEntry{
		name: RunnerName, passwd: s.passwdField(), uid: uid, gid: gid,
		home: RunnerHome, shell: RunnerShell,
	}); err != nil {
		return 0, 0, err
	}
	if s.shadow != nil {
		// System users get no password aging.
		if err := s.shadow.update(newShadow(RunnerName, day, -1, -1, -1)); err != nil {
			return 0, 0, err
		}
	}
	return uid, gid, nil
}

// passwdField is what useradd puts in passwd's password field: "x" when
// /etc/shadow exists, else the locked password itself.
func (s *state) passwdField() string {
	if s.shadow != nil {
		return "x"
	}
	return "!"
}
