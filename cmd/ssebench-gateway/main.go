// Command ssebench-gateway is a restricted run's model gateway where the
// run is not on the machine that started it: the Kubernetes backend runs it
// in a pod of its own, behind a Service, next to the run's pod (SPEC.md
// section 14). Only this pod mounts the run's Secret, which holds the set-up
// gateway.MarshalRemote wrote, the real API key among it; the run's pod
// gets the Service's address and its per-run token.
//
// It serves the gateway over TCP on --listen, writes each request's record
// and the totals so far to stdout, each line signed with the set-up's
// report key (gateway.ReadReport reads them back from the pod's log and
// believes no other line), and on SIGTERM lets requests in flight finish,
// writes the totals a last time and exits 0.
//
// Usage:
//
//	ssebench-gateway --config /etc/ssebench-gateway/gateway.json --listen :4000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	// A FROM-scratch image has no CA store; the gateway then trusts the
	// roots this package embeds (Mozilla's, as Go ships them).
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/42-b3yond-6ug/ssebench/gateway"
)

func main() {
	config := flag.String("config", "", "the gateway's set-up (JSON, from gateway.MarshalRemote)")
	listen := flag.String("listen", ":4000", "TCP address to serve on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, *config, *listen, os.Stdout, os.Stderr, nil)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ssebench-gateway:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, reporting on out and logging to logw (a
// pod's log holds both); ready, when set, is told the address once it
// listens.
func run(ctx context.Context, config, listen string, out, logw io.Writer, ready func(net.Addr)) error {
	if config == "" {
		return errors.New("--config is required")
	}
	data, err := os.ReadFile(config)
	if err != nil {
		return err
	}
	cfg, opts, err := gateway.UnmarshalRemote(data)
	if err != nil {
		return err
	}
	rw := gateway.NewReportWriter(out)
	g, err := gateway.New(cfg, append(opts, gateway.WithRecorder(rw), gateway.WithLog(logw))...)
	if err != nil {
		return err
	}
	rw.Attach(g)
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	if err := g.Serve(l); err != nil {
		return err
	}
	fmt.Fprintf(logw, "ssebench-gateway: serving %s on %s for %s\n", cfg.Upstream.Flavour, l.Addr(), cfg.Upstream.BaseURL.Redacted())
	if ready != nil {
		ready(l.Addr())
	}
	<-ctx.Done()
	cerr := g.Close()
	if err := rw.WriteTotals(g.Totals()); err != nil {
		return err
	}
	return cerr
}
