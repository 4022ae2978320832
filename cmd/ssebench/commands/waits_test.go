package commands_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrremote "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/faultproxy"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// TestHostileCommandsWaitAndResume runs inspect, assemble, push and mirror
// through a fault-injecting proxy whose registry asks to wait (429 or 503
// with Retry-After) on its ping or a config, or cuts a config or a manifest
// short: each command waits as asked, resumes the cut read, and finishes
// with the image a clean network gives. Before, these commands gave up in
// 4–8 s, and a cut config failed them.
func TestHostileCommandsWaitAndResume(t *testing.T) {
	reg := testenv.StartRegistry(t)
	ctx := context.Background()
	caseRef, runtimeRef := "/faults/case/examples/proj-1", "/faults/runtime:1"
	caseImg, rtImg := caseImage(t), runtimeImage(t)
	if _, err := remote.Push(ctx, reg+caseRef, caseImg); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Push(ctx, reg+runtimeRef, rtImg); err != nil {
		t.Fatal(err)
	}
	caseCfg, err := caseImg.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	rtCfg, err := rtImg.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	waitFor := func(code int, secs string) faultproxy.Fault {
		return faultproxy.Fault{Kind: faultproxy.Status, Code: code, RetryAfterHeader: secs, Body: `{"errors":[{"code":"TOOMANYREQUESTS","message":"wait"}]}`}
	}
	wait := func(code int) faultproxy.Fault { return waitFor(code, "1") }
	ping := func(code int) faultproxy.Rule {
		// Three times: go-containerregistry's own retries (1 s, 3 s)
		// gave up after the third. Its two pings of a loopback
		// registry (https and http, both sent over http) go at once
		// and share the faults and the waits: at least one wait of 1 s.
		return faultproxy.Rule{Path: "/v2/", Exact: true, Times: 3, Fault: wait(code)}
	}
	assembleArgs := func(host, out string) []string {
		return []string{"assemble", "tool", "--case", host + caseRef, "--task", "proj-1", "--source", "/src/proj",
			"--runtime", host + runtimeRef, "--registry", out, "--pull=missing"}
	}
	clean := newCLI(t)
	if _, stderr, err := clean.run(t, assembleArgs(reg, reg+"/out")...); err != nil {
		t.Fatalf("assemble without faults: %v\n%s", err, stderr)
	}
	version := strings.TrimSpace(string(mustRead(t, repoRoot+"/VERSION")))
	toolRef := "/out/tool/proj-1:" + version
	wantTool := clean.storedDigest(t, reg+toolRef)

	for i, tc := range []struct {
		name  string
		cmd   string
		rules []faultproxy.Rule
		wait  time.Duration
		fails string // a word of the one-line error; "" when the command must finish
	}{
		{"inspect past a ping 503 with Retry-After", "inspect", []faultproxy.Rule{ping(503)}, time.Second, ""},
		{"inspect past a config 429 with Retry-After", "inspect", []faultproxy.Rule{{Method: "GET", Path: "/blobs/" + rtCfg.String(), Times: 3, Fault: wait(429)}}, 3 * time.Second, ""},
		{"inspect past a reset config", "inspect", []faultproxy.Rule{{Method: "GET", Path: "/blobs/" + rtCfg.String(), Times: 2, Fault: faultproxy.Fault{Kind: faultproxy.Reset, After: 30}}}, 0, ""},
		{"assemble past a ping 429 with Retry-After", "assemble", []faultproxy.Rule{ping(429)}, time.Second, ""},
		{"assemble past a truncated case config", "assemble", []faultproxy.Rule{{Method: "GET", Path: "/blobs/" + caseCfg.String(), Times: 2, Fault: faultproxy.Fault{Kind: faultproxy.Truncate, After: 50}}}, 0, ""},
		{"assemble past a reset manifest", "assemble", []faultproxy.Rule{{Method: "GET", Path: "/manifests/", Times: 2, Fault: faultproxy.Fault{Kind: faultproxy.Reset, After: 40}}}, 0, ""},
		// Retry-After: 2 twice, where the old backoff waited 0.5 s and 1 s.
		{"push past a ping 503 with Retry-After", "push", []faultproxy.Rule{{Path: "/v2/", Exact: true, Times: 2, Fault: waitFor(503, "2")}}, 2 * time.Second, ""},
		{"push past a manifest PUT 503 with Retry-After", "push", []faultproxy.Rule{{Method: "PUT", Path: "/manifests/", Times: 2, Fault: wait(503)}}, 2 * time.Second, ""},
		{"mirror past a ping 429 with Retry-After", "mirror", []faultproxy.Rule{ping(429)}, time.Second, ""},
		{"mirror past a reset source config", "mirror", []faultproxy.Rule{{Method: "GET", Path: "/blobs/" + rtCfg.String(), Times: 2, Fault: faultproxy.Fault{Kind: faultproxy.Reset, After: 30}}}, 0, ""},
		{"inspect when the ping asks for two hours", "inspect", []faultproxy.Rule{{Path: "/v2/", Exact: true, Times: 2, Fault: waitFor(503, "7200")}}, 0, "asks to wait 2h0m0s"},
		{"assemble when the case config asks for two hours", "assemble", []faultproxy.Rule{{Method: "GET", Path: "/blobs/" + caseCfg.String(), Times: 1, Fault: waitFor(429, "7200")}}, 0, "asks to wait 2h0m0s"},
	} {
		copyTo := fmt.Sprintf("%s/copy%d", reg, i)
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "registry Retry-After and cut small blobs (commands)")
			p := faultproxy.New(reg)
			defer p.Close()
			c := newCLI(t)
			var args []string
			switch tc.cmd {
			case "inspect":
				args = []string{"inspect", p.Host + runtimeRef}
			case "assemble":
				args = assembleArgs(p.Host, reg+"/out")
			case "push":
				// The tool image, named under the proxy, assembled
				// before the faults.
				if _, stderr, err := c.run(t, assembleArgs(reg, p.Host+"/out")...); err != nil {
					t.Fatalf("assemble: %v\n%s", err, stderr)
				}
				// One job: two blobs would meet the ping's fault at once.
				args = []string{"push", "--jobs", "1", p.Host + toolRef}
			case "mirror":
				args = []string{"mirror", "--registry", p.Host + "/faults", "--to", copyTo, "--only-args", p.Host + runtimeRef}
			}
			p.Add(tc.rules...)
			start := time.Now()
			stdout, stderr, err := c.run(t, args...)
			took := time.Since(start)
			for i, n := range p.Fired() {
				if n != tc.rules[i].Times {
					t.Fatalf("rule %d fired %d times, want %d (err %v)", i, n, tc.rules[i].Times, err)
				}
			}
			if tc.fails != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fails) || !strings.Contains(err.Error(), p.Host) {
					t.Fatalf("%s = %v, want an error naming %s and %q", tc.cmd, err, p.Host, tc.fails)
				}
				oneLine(t, err)
				t.Logf("%s: %v", tc.cmd, err)
				if took > 5*time.Second {
					t.Errorf("%s took %s to fail", tc.cmd, took)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s past %v: %v\n%s", tc.cmd, p.Log(), err, stderr)
			}
			if took < tc.wait {
				t.Errorf("%s took %s: the Retry-After (%s in all) was not waited for", tc.cmd, took.Round(time.Millisecond), tc.wait)
			}
			switch tc.cmd {
			case "inspect":
				if d, _ := rtImg.Digest(); !strings.Contains(stdout, d.String()) && !strings.Contains(stdout, rtCfg.String()[:19]) {
					t.Errorf("inspect printed nothing of the image:\n%s", stdout)
				}
			case "assemble":
				if got := c.storedDigest(t, reg+toolRef); got != wantTool {
					t.Errorf("tool image %s, want %s (assembled on a clean network)", got, wantTool)
				}
				verifyStore(t, c.store)
			case "push":
				if got := registryDigest(t, reg+toolRef); got != c.storedDigest(t, p.Host+toolRef) {
					t.Errorf("the registry holds %s, the store %s", got, c.storedDigest(t, p.Host+toolRef))
				}
			case "mirror":
				want, _ := rtImg.Digest()
				if got := registryDigest(t, copyTo+"/runtime:1"); got != want.String() {
					t.Errorf("mirrored %s, want %s", got, want)
				}
			}
		})
	}
}

// registryDigest is the digest ref names in its registry.
func registryDigest(t *testing.T, ref string) string {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ggcrremote.Head(r)
	if err != nil {
		t.Fatalf("%s is not in the registry: %v", ref, err)
	}
	return d.Digest.String()
}
