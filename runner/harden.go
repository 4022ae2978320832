package runner

import (
	"context"
	"slices"

	"github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// A run's containers hold the agent's code, root in them (the task
// container's daemon and entrypoint) and, after the phase, the agent's
// code again in the checks: the bare default spec of containerd lets
// every one of them make any system call the kernel has (keyctl, bpf,
// userfaultfd, io_uring, ...), and mounts a host folder without nosuid or
// nodev. So every container gets containerd's default seccomp profile
// (Docker's), plus what namespaces need, and every bind mount nosuid and
// nodev.

// namespaceSyscalls are what the default profile refuses to a container
// without CAP_SYS_ADMIN and the grade's sandbox (sserun.Sandbox) needs:
// new user, mount, network, IPC and PID namespaces (clone with their
// flags, unshare) and mounts inside them (a tmpfs /tmp, a /proc of its
// own, binds of the kept folders). Without CAP_SYS_ADMIN in the
// container's own user namespace, mount, umount and pivot_root work only
// inside a user namespace the process made: the container's own mounts
// stay out of reach. An agent's own sandbox (bubblewrap) needs the same.
// clone3 keeps the profile's ENOSYS, on which glibc and Go use clone.
var namespaceSyscalls = []string{"clone", "unshare", "setns", "mount", "umount", "umount2", "pivot_root", "sethostname", "setdomainname"}

// withSeccomp sets containerd's default seccomp profile for the spec's
// capabilities, with namespaceSyscalls allowed. It must come after
// anything that changes the capabilities.
func withSeccomp(ctx context.Context, c oci.Client, ct *containers.Container, s *specs.Spec) error {
	if err := seccomp.WithDefaultProfile()(ctx, c, ct, s); err != nil {
		return err
	}
	s.Linux.Seccomp.Syscalls = append(s.Linux.Seccomp.Syscalls, specs.LinuxSyscall{
		Names:  namespaceSyscalls,
		Action: specs.ActAllow,
		Args:   []specs.LinuxSeccompArg{},
	})
	return nil
}

// hardenedBindOptions go on every bind mount: no setuid bit and no device
// node on a host folder (the results, the archive, the shared tree, a
// socket's folder) means anything to a process of the container.
var hardenedBindOptions = []string{"nosuid", "nodev"}

// withHardenedBinds adds hardenedBindOptions to every bind mount of the
// spec, the run's own and containerd's (/etc/hosts, /etc/resolv.conf of
// an open run): it comes last.
func withHardenedBinds(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
	for i, m := range s.Mounts {
		if m.Type != "bind" && !slices.Contains(m.Options, "bind") && !slices.Contains(m.Options, "rbind") {
			continue
		}
		for _, o := range hardenedBindOptions {
			if !slices.Contains(m.Options, o) {
				s.Mounts[i].Options = append(s.Mounts[i].Options, o)
			}
		}
	}
	return nil
}
