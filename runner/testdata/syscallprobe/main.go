// Command syscallprobe tries system calls a container's code should not
// make (the default seccomp profile refuses them) and says, one line
// each, whether the kernel let it: "keyctl allowed" or "keyctl refused:
// operation not permitted". Tests of the runner mount it into a
// container.
package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func main() {
	// KEYCTL_JOIN_SESSION_KEYRING with no name: a new session keyring,
	// which a bare container spec allows its root.
	_, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	report("keyctl", e)
	// userfaultfd: a favourite of kernel exploits.
	fd, _, e := unix.Syscall(unix.SYS_USERFAULTFD, 0, 0, 0)
	if e == 0 {
		unix.Close(int(fd))
	}
	report("userfaultfd", e)
}

func report(name string, e unix.Errno) {
	if e == 0 {
		fmt.Println(name, "allowed")
		return
	}
	fmt.Printf("%s refused: %v\n", name, e)
}
