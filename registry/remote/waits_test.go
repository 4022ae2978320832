package remote

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/faultproxy"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/imagetest"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// waitFault answers code with a Retry-After of v (seconds or an HTTP date).
func waitFault(code int, v string) faultproxy.Fault {
	return faultproxy.Fault{Kind: faultproxy.Status, Code: code, RetryAfterHeader: v,
		Body: fmt.Sprintf(`{"errors":[{"code":"TOOMANYREQUESTS","message":"%s, wait"}]}`, http.StatusText(code))}
}

// inSeconds marks a Retry-After that is sent as an HTTP date s seconds
// after the case starts (see dated).
func inSeconds(s int) string { return fmt.Sprintf("date+%d", s) }

// dated turns an inSeconds mark of rule into an HTTP date from now.
func dated(rule faultproxy.Rule) faultproxy.Rule {
	var s int
	if _, err := fmt.Sscanf(rule.Fault.RetryAfterHeader, "date+%d", &s); err == nil {
		rule.Fault.RetryAfterHeader = time.Now().Add(time.Duration(s) * time.Second).UTC().Format(http.TimeFormat)
	}
	return rule
}

// waitSetup is a registry with one image in it, behind the tests below.
type waitSetup struct {
	reg    string
	img    v1.Image
	want   v1.Hash
	config string // path part of the config blob
	small  string // path part of the small layer
	opts   []Option
}

func newWaitSetup(t *testing.T) *waitSetup {
	t.Helper()
	reg := testenv.StartRegistry(t)
	small := imagetest.Layer(t, 5_000)
	img := imagetest.ImageOf(t, imagetest.Layer(t, 300_000), small)
	cfg, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	s := &waitSetup{
		reg: reg, img: img, want: imagetest.Digest(t, img),
		config: "/blobs/" + cfg.String(), small: "/blobs/" + imagetest.Digest(t, small).String(),
		// Five attempts a millisecond apart: only a Retry-After makes
		// them wait, so the time taken shows whether it was honoured.
		opts: []Option{noAuth, withRetries(5, time.Millisecond), withStall(2 * time.Second), WithJobs(2)},
	}
	if _, err := Push(context.Background(), reg+"/waits/src:1", img, s.opts...); err != nil {
		t.Fatal(err)
	}
	return s
}

// op is what a command does against the registry: push (ssebench push),
// pull (assemble's pull of a base into the store, every layer read),
// inspect (a look at manifest and config, no store) and mirror.
type op string

const (
	opPush    op = "push"
	opPull    op = "pull"
	opInspect op = "inspect"
	opMirror  op = "mirror"
)

// run does o through the proxy at host; repo names what a push or mirror
// writes (in the registry behind the proxy).
func (s *waitSetup) run(ctx context.Context, t *testing.T, o op, host, repo string) error {
	t.Helper()
	switch o {
	case opPush:
		_, err := Push(ctx, host+"/"+repo+":1", s.img, s.opts...)
		return err
	case opPull:
		st := imagetest.Store(t)
		r, err := NewResolver(append([]Option{WithStore(st)}, s.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := pullAll(ctx, r, host+"/waits/src:1"); err != nil {
			return err
		}
		imagetest.Verified(t, st.Dir())
		return nil
	case opInspect:
		r, err := NewResolver(s.opts...)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Resolve(ctx, host+"/waits/src:1")
		if err != nil {
			return err
		}
		if _, err := res.Image.ConfigFile(); err != nil {
			return err
		}
		if d, err := res.Image.Digest(); err != nil || d != s.want {
			return fmt.Errorf("inspect saw %s (%v), want %s", d, err, s.want)
		}
		return nil
	case opMirror:
		// Into the registry itself: a mirror within one registry mounts
		// every blob and reads none.
		_, err := Mirror(ctx, []string{host + "/waits/src:1"}, host+"/waits", s.reg+"/"+repo, s.opts...)
		return err
	}
	t.Fatalf("unknown op %s", o)
	return nil
}

// written is the reference a push or a mirror to repo writes (in the
// registry itself), "" for the other ops.
func (s *waitSetup) written(o op, repo string) string {
	switch o {
	case opPush:
		return s.reg + "/" + repo + ":1"
	case opMirror:
		return s.reg + "/" + repo + "/src:1"
	}
	return ""
}

// TestHostileRegistryRetryAfter: a registry that answers 429 or 503 with a
// Retry-After, on any request (the ping, the token, a manifest, a config,
// a layer, an upload), is waited for as long as it asks, and the command
// then finishes with the right image. Before, only uploads waited: a
// Retry-After on the ping or a config was retried 1 s and 3 s later, or
// at once, and push, inspect and assemble gave up in 4–8 s.
func TestHostileRegistryRetryAfter(t *testing.T) {
	s := newWaitSetup(t)
	const times = 3 // each fault three times, Retry-After: 1 each
	cases := []struct {
		name   string
		op     op
		tokens bool
		rule   faultproxy.Rule
		// wait is the least time the operation must take: less than all
		// the waits where two requests meet a fault at once (two jobs;
		// go-containerregistry pings a loopback registry's https and
		// http at once, both sent over http by plainLoopback).
		wait time.Duration
	}{
		{"ping 429 on push", opPush, false, faultproxy.Rule{Path: "/v2/", Exact: true, Fault: waitFault(429, "1")}, time.Second},
		{"ping 503 on pull", opPull, false, faultproxy.Rule{Path: "/v2/", Exact: true, Fault: waitFault(503, "1")}, time.Second},
		{"ping 503 on inspect", opInspect, false, faultproxy.Rule{Path: "/v2/", Exact: true, Fault: waitFault(503, "1")}, time.Second},
		{"ping 429 with an HTTP date on inspect", opInspect, false, faultproxy.Rule{Path: "/v2/", Exact: true, Times: 2, Fault: waitFault(429, inSeconds(3))}, 1 * time.Second},
		{"ping 503 on mirror", opMirror, false, faultproxy.Rule{Path: "/v2/", Exact: true, Fault: waitFault(503, "1")}, time.Second},
		{"token 429 on push", opPush, true, faultproxy.Rule{Path: faultproxy.TokenPath, Exact: true, Fault: waitFault(429, "1")}, 2 * time.Second},
		{"token 429 on pull", opPull, true, faultproxy.Rule{Path: faultproxy.TokenPath, Exact: true, Fault: waitFault(429, "1")}, 3 * time.Second},
		{"config 503 on pull", opPull, false, faultproxy.Rule{Method: "GET", Path: s.config, Fault: waitFault(503, "1")}, 3 * time.Second},
		{"config 503 on inspect", opInspect, false, faultproxy.Rule{Method: "GET", Path: s.config, Fault: waitFault(503, "1")}, 3 * time.Second},
		{"config 429 with an HTTP date on mirror", opMirror, false, faultproxy.Rule{Method: "GET", Path: s.config, Times: 1, Fault: waitFault(429, inSeconds(3))}, 1 * time.Second},
		{"manifest GET 429 on inspect", opInspect, false, faultproxy.Rule{Method: "GET", Path: manifestsPath, Fault: waitFault(429, "1")}, 3 * time.Second},
		{"manifest GET 429 on mirror", opMirror, false, faultproxy.Rule{Method: "GET", Path: manifestsPath, Fault: waitFault(429, "1")}, 3 * time.Second},
		{"small layer 503 on pull", opPull, false, faultproxy.Rule{Method: "GET", Path: s.small, Fault: waitFault(503, "1")}, 3 * time.Second},
		{"first manifest PUT 503 on push", opPush, false, faultproxy.Rule{Method: "PUT", Path: manifestsPath, Fault: waitFault(503, "1")}, 3 * time.Second},
		{"upload PUT 429 on push", opPush, false, faultproxy.Rule{Method: "PUT", Path: uploadPath, Fault: waitFault(429, "1")}, 2 * time.Second},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "registry Retry-After")
			t.Parallel()
			p := faultproxy.New(s.reg)
			defer p.Close()
			if tc.tokens {
				p.RequireTokens()
			}
			if tc.rule.Times == 0 {
				tc.rule.Times = times
			}
			p.Add(dated(tc.rule))
			repo := fmt.Sprintf("waits/ra%d", i)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			err := s.run(ctx, t, tc.op, p.Host, repo)
			took := time.Since(start)
			if fired := p.Fired()[0]; fired != tc.rule.Times {
				t.Fatalf("the fault fired %d times, want %d (err %v)", fired, tc.rule.Times, err)
			}
			if err != nil {
				t.Fatalf("%s past %v: %v", tc.op, p.Log(), err)
			}
			if took < tc.wait {
				t.Errorf("%s took %s: the Retry-After (%s in all) was not waited for", tc.op, took.Round(time.Millisecond), tc.wait)
			}
			if ref := s.written(tc.op, repo); ref != "" {
				if got := imagetest.Pulled(t, ref); got != s.want {
					t.Errorf("%s wrote %s, want %s", tc.op, got, s.want)
				}
			}
		})
	}
}

// TestHostileRegistryRetryAfterLimits: a Retry-After longer than ssebench
// waits (a minute), or one that ends past the command's deadline, fails at
// once in one line that names the registry and the wait, instead of
// hanging or failing later with a bare timeout; the push tags nothing.
func TestHostileRegistryRetryAfterLimits(t *testing.T) {
	s := newWaitSetup(t)
	cases := []struct {
		name     string
		op       op
		deadline time.Duration // 0: none
		rule     faultproxy.Rule
		says     []string
	}{
		{"ping asks for two hours on push", opPush, 0, faultproxy.Rule{Path: "/v2/", Exact: true, Fault: waitFault(503, "7200")}, []string{"2h0m0s", "Retry-After", "try again later"}},
		{"ping asks for two hours on pull", opPull, 0, faultproxy.Rule{Path: "/v2/", Exact: true, Fault: waitFault(503, "7200")}, []string{"2h0m0s", "Retry-After"}},
		{"config asks for two hours on inspect", opInspect, 0, faultproxy.Rule{Method: "GET", Path: s.config, Fault: waitFault(429, "7200")}, []string{"2h0m0s", "Retry-After"}},
		{"manifest asks for three hours as an HTTP date", opInspect, 0, faultproxy.Rule{Method: "GET", Path: manifestsPath, Fault: waitFault(429, inSeconds(3*3600))}, []string{"3h0m0s", "Retry-After"}},
		{"upload asks for two hours on push", opPush, 0, faultproxy.Rule{Method: "PUT", Path: uploadPath, Fault: waitFault(429, "7200")}, []string{"2h0m0s", "Retry-After"}},
		{"source config asks for two hours on mirror", opMirror, 0, faultproxy.Rule{Method: "GET", Path: s.config, Fault: waitFault(503, "7200")}, []string{"2h0m0s", "Retry-After"}},
		{"ping wait past the deadline on push", opPush, 3 * time.Second, faultproxy.Rule{Path: "/v2/", Exact: true, Fault: waitFault(429, "30")}, []string{"30s", "deadline"}},
		{"config wait past the deadline on pull", opPull, 3 * time.Second, faultproxy.Rule{Method: "GET", Path: s.config, Fault: waitFault(503, "30")}, []string{"30s", "deadline"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "registry Retry-After limits")
			t.Parallel()
			p := faultproxy.New(s.reg)
			defer p.Close()
			p.Add(dated(tc.rule))
			repo := fmt.Sprintf("waits/limit%d", i)
			// A minute and a half bounds the old behaviour (a silent
			// cap of a minute per attempt) in a failing run.
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			if tc.deadline > 0 {
				ctx, cancel = context.WithTimeout(context.Background(), tc.deadline)
			}
			defer cancel()
			start := time.Now()
			err := s.run(ctx, t, tc.op, p.Host, repo)
			took := time.Since(start)
			if len(p.Log()) == 0 {
				t.Fatal("no fault fired: the case tests nothing")
			}
			if err == nil {
				t.Fatalf("%s past %v succeeded", tc.op, p.Log())
			}
			msg := err.Error()
			t.Logf("%s: %s", tc.op, msg)
			if strings.Contains(msg, "\n") {
				t.Errorf("the error is not one line: %q", msg)
			}
			for _, w := range append(tc.says, p.Host) {
				if !strings.Contains(msg, w) {
					t.Errorf("the error does not say %q: %s", w, msg)
				}
			}
			if took > 2*time.Second {
				t.Errorf("%s took %s to fail: the wait it could not honour was started", tc.op, took.Round(time.Millisecond))
			}
			if ref := s.written(tc.op, repo); ref != "" && tagged(t, ref) {
				t.Error("a failed command left the tag")
			}
		})
	}
}

// TestHostileRegistryCutSmallBlobs: a connection reset or a body closed
// short on a small blob (a config, a manifest, a small layer) is retried
// and resumed as one on a large layer is, and the command finishes with
// the right image; a resumed read that brings other bytes fails on the
// digest in one line. Before, only large layers (read through the store)
// were resumed: the same fault on a config failed push, inspect and pull.
func TestHostileRegistryCutSmallBlobs(t *testing.T) {
	s := newWaitSetup(t)
	reset := func(after int64) faultproxy.Fault { return faultproxy.Fault{Kind: faultproxy.Reset, After: after} }
	truncate := func(after int64) faultproxy.Fault { return faultproxy.Fault{Kind: faultproxy.Truncate, After: after} }
	cases := []struct {
		name  string
		op    op
		rules []faultproxy.Rule
		fails string // a word of the one-line error; "" when the command must succeed
	}{
		{"reset on the config on pull", opPull, []faultproxy.Rule{{Method: "GET", Path: s.config, Times: 2, Fault: reset(40)}}, ""},
		{"reset on the config before any byte on inspect", opInspect, []faultproxy.Rule{{Method: "GET", Path: s.config, Times: 2, Fault: reset(0)}}, ""},
		{"truncated config on pull", opPull, []faultproxy.Rule{{Method: "GET", Path: s.config, Times: 1, Fault: truncate(100)}}, ""},
		{"truncated config on inspect", opInspect, []faultproxy.Rule{{Method: "GET", Path: s.config, Times: 3, Fault: truncate(10)}}, ""},
		{"reset on the config on mirror", opMirror, []faultproxy.Rule{{Method: "GET", Path: s.config, Times: 2, Fault: reset(40)}}, ""},
		{"reset on the manifest on pull", opPull, []faultproxy.Rule{{Method: "GET", Path: manifestsPath, Times: 2, Fault: reset(30)}}, ""},
		{"truncated manifest on inspect", opInspect, []faultproxy.Rule{{Method: "GET", Path: manifestsPath, Times: 1, Fault: truncate(50)}}, ""},
		{"truncated manifest on mirror", opMirror, []faultproxy.Rule{{Method: "GET", Path: manifestsPath, Times: 2, Fault: truncate(50)}}, ""},
		{"reset on the small layer on pull", opPull, []faultproxy.Rule{{Method: "GET", Path: s.small, Times: 2, Fault: reset(1000)}}, ""},
		{"reset on the small layer on mirror", opMirror, []faultproxy.Rule{{Method: "GET", Path: s.small, Times: 2, Fault: reset(1000)}}, ""},
		{"reset on the ping on push", opPush, []faultproxy.Rule{{Path: "/v2/", Exact: true, Times: 2, Fault: reset(0)}}, ""},
		{"resumed config with other bytes", opInspect, []faultproxy.Rule{
			{Method: "GET", Path: s.config, Times: 1, Fault: reset(40)},
			{Method: "GET", Path: s.config, Times: 1, Fault: faultproxy.Fault{Kind: faultproxy.Corrupt, After: 0}},
		}, "damaged on the way"},
		{"resumed config with other bytes on mirror", opMirror, []faultproxy.Rule{
			{Method: "GET", Path: s.config, Times: 1, Fault: reset(40)},
			{Method: "GET", Path: s.config, Times: 1, Fault: faultproxy.Fault{Kind: faultproxy.Corrupt, After: 5}},
		}, "damaged on the way"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "registry cut small blobs")
			p := faultproxy.New(s.reg)
			defer p.Close()
			p.Add(tc.rules...)
			repo := fmt.Sprintf("waits/cut%d", i)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := s.run(ctx, t, tc.op, p.Host, repo)
			if len(p.Log()) == 0 {
				t.Fatal("no fault fired: the case tests nothing")
			}
			for j, n := range p.Fired() {
				if tc.rules[j].Times > 0 && n != tc.rules[j].Times {
					t.Fatalf("rule %d fired %d times, want %d (err %v)", j, n, tc.rules[j].Times, err)
				}
			}
			if tc.fails != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fails) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("%s = %v, want one line naming %q", tc.op, err, tc.fails)
				}
				t.Logf("%s: %s", tc.op, err)
				p.Clear()
				if err := s.run(ctx, t, tc.op, p.Host, repo); err != nil {
					t.Fatalf("rerun without the fault: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s past %v: %v", tc.op, p.Log(), err)
			}
			if ref := s.written(tc.op, repo); ref != "" {
				if got := imagetest.Pulled(t, ref); got != s.want {
					t.Errorf("%s wrote %s, want %s", tc.op, got, s.want)
				}
			}
		})
	}
}

// TestHostileMirrorFlakySource mirrors a set of images from a source that
// cuts one blob read in five (or in three, or answers 503 with a
// Retry-After): every image arrives with its digest. Before, the first
// cut config or manifest failed the mirror.
func TestHostileMirrorFlakySource(t *testing.T) {
	reg := testenv.StartRegistry(t)
	ctx := context.Background()
	opts := []Option{noAuth, withRetries(5, time.Millisecond), withStall(2 * time.Second), WithJobs(2)}
	var refs []string
	want := map[string]v1.Hash{}
	for i := range 4 {
		img := imagetest.ImageOf(t, imagetest.Layer(t, 40_000+int64(i)), imagetest.Layer(t, 3_000+int64(i)), imagetest.Layer(t, 200_000+int64(i)))
		ref := fmt.Sprintf("%s/flaky/img%d:1", reg, i)
		if _, err := Push(ctx, ref, img, opts...); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, fmt.Sprintf("flaky/img%d:1", i))
		want[fmt.Sprintf("img%d", i)] = imagetest.Digest(t, img)
	}
	for i, tc := range []struct {
		name  string
		rules []faultproxy.Rule
	}{
		{"one blob in five reset", []faultproxy.Rule{{Method: "GET", Path: blobPath, Every: 5, Fault: faultproxy.Fault{Kind: faultproxy.Reset, After: 20}}}},
		{"one blob in five reset before any byte", []faultproxy.Rule{{Method: "GET", Path: blobPath, Every: 5, Fault: faultproxy.Fault{Kind: faultproxy.Reset}}}},
		{"one blob in five truncated", []faultproxy.Rule{{Method: "GET", Path: blobPath, Every: 5, Fault: faultproxy.Fault{Kind: faultproxy.Truncate, After: 100}}}},
		{"one read in three reset, manifests too", []faultproxy.Rule{{Method: "GET", Path: "/v2/", Every: 3, Fault: faultproxy.Fault{Kind: faultproxy.Reset, After: 20}}}},
		{"one blob in two reset", []faultproxy.Rule{{Method: "GET", Path: blobPath, Every: 2, Fault: faultproxy.Fault{Kind: faultproxy.Reset, After: 20}}}},
		{"one blob in four truncated", []faultproxy.Rule{{Method: "GET", Path: blobPath, Every: 4, Fault: faultproxy.Fault{Kind: faultproxy.Truncate, After: 10}}}},
		{"one blob in five 503 with Retry-After", []faultproxy.Rule{{Method: "GET", Path: blobPath, Every: 5, Fault: waitFault(503, "1")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "registry flaky mirror source")
			from := faultproxy.New(reg)
			defer from.Close()
			from.Add(tc.rules...)
			var src []string
			for _, r := range refs {
				src = append(src, from.Host+"/"+r)
			}
			to := fmt.Sprintf("%s/flaky-copy%d", reg, i)
			rep, err := Mirror(ctx, src, from.Host+"/flaky", to, opts...)
			if n := len(from.Log()); n < 3 {
				t.Fatalf("the fault fired %d times: the case tests too little", n)
			}
			if err != nil {
				t.Fatalf("mirror past %d faults: %v", len(from.Log()), err)
			}
			if len(rep.Images) != len(refs) {
				t.Fatalf("mirrored %d images, want %d", len(rep.Images), len(refs))
			}
			for name, d := range want {
				if got := imagetest.Pulled(t, to+"/"+name+":1"); got != d {
					t.Errorf("%s: mirrored %s, want %s", name, got, d)
				}
			}
		})
	}
}
