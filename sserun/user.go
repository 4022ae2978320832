package sserun

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// User is an account a process runs as.
type User struct {
	Name string
	UID  int
	GID  int
	Home string
}

// Model is the agent's account (SPEC.md section 4): uid and gid 1000,
// whatever /etc/passwd says, because the tool layer made it so.
var Model = User{Name: contract.ModelName, UID: contract.ModelUID, GID: contract.ModelGID, Home: contract.ModelHome}

// PasswdFile is where LookupUser reads accounts.
const PasswdFile = "/etc/passwd"

// LookupUser finds name in a passwd file. It reads the file rather than
// calling the C library so that the binaries stay static.
func LookupUser(passwdFile, name string) (User, error) {
	f, err := os.Open(passwdFile)
	if err != nil {
		return User{}, fmt.Errorf("looking up user %q: %w", name, err)
	}
	defer f.Close()
	u, err := findUser(f, name)
	if err != nil {
		return User{}, fmt.Errorf("looking up user %q in %s: %w", name, passwdFile, err)
	}
	return u, nil
}

func findUser(r io.Reader, name string) (User, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) < 7 || f[0] != name {
			continue
		}
		uid, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || uid < 0 || gid < 0 {
			return User{}, fmt.Errorf("malformed entry %q", line)
		}
		return User{Name: name, UID: uid, GID: gid, Home: f[5]}, nil
	}
	if err := sc.Err(); err != nil {
		return User{}, err
	}
	return User{}, fmt.Errorf("no such user")
}

// CheckRunner refuses an account that must not run the task's scripts
// (SPEC.md section 12): root, the agent, or one whose primary group is
// root's or the agent's, which would hand the scripts root's group files
// or the agent the scripts' files. SSE_RUNNER_USER comes from the image's
// environment, which the run sets but a hostile image may have tried to.
func CheckRunner(u User) error {
	switch {
	case u.UID == 0:
		return fmt.Errorf("the runner %q is root: scripts must not run as root", u.Name)
	case u.UID == Model.UID:
		return fmt.Errorf("the runner %q has the agent's uid %d: scripts must not run as the agent", u.Name, u.UID)
	case u.GID == 0 || u.GID == Model.GID:
		return fmt.Errorf("the runner %q has primary group %d: scripts must run in a group of their own", u.Name, u.GID)
	}
	return nil
}
