package runner

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// An open run shares the host's network namespace (NetworkOpen): its
// agent reaches whatever listens on the host's loopback interface. The
// image registry is the worst of those: an agent that pushes there
// replaces the images later runs pull and trust (the runtime, a tool
// image). A network namespace of its own with NAT would keep the agent's
// egress and not the host's loopback; until the runner makes one, an open
// run is refused on a machine whose registry is on loopback.

// resolveTimeout bounds the lookup of the registry's host name.
const resolveTimeout = 5 * time.Second

// CheckOpenNetwork refuses NetworkOpen on a machine whose image registry
// (REGISTRY: "host[:port][/prefix]") listens on a loopback address, by
// name ("localhost"), by address (127.0.0.0/8, ::1) or by what the name
// resolves to. The error says why and what to do instead.
func CheckOpenNetwork(ctx context.Context, registry string) error {
	host := registry
	if i := strings.IndexByte(host, '/'); i >= 0 {
		host = host[:i]
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "" {
		return nil
	}
	loopback := func(ip net.IP) bool { return ip.IsLoopback() || ip.IsUnspecified() }
	found := false
	switch ip := net.ParseIP(host); {
	case ip != nil:
		found = loopback(ip)
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		found = true
	default:
		ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil {
			return nil // not on this machine's loopback, as far as it knows
		}
		for _, a := range addrs {
			found = found || loopback(a.IP)
		}
	}
	if !found {
		return nil
	}
	return fmt.Errorf("--egress open shares this machine's network with the agent, which would reach the image registry %s on the loopback interface and could push images later runs trust (and any other local service, a model server among them): use --egress restricted (the model through the run's gateway), or a registry this machine does not serve on loopback", registry)
}
