package faultproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func upstream(t *testing.T, body []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func get(t *testing.T, c *http.Client, host string) ([]byte, *http.Response, error) {
	t.Helper()
	resp, err := c.Get("http://" + host + "/v2/r/blobs/sha256:x")
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp, err
}

// TestFaults: each kind does what it says, only as often as told, and the
// proxy forwards faithfully otherwise.
func TestFaults(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 100)
	up := upstream(t, body)
	c := &http.Client{Timeout: 5 * time.Second}

	for _, tc := range []struct {
		f     Fault
		check func(b []byte, resp *http.Response, err error) string
	}{
		{Fault{Kind: Status, Code: 503, RetryAfter: 2 * time.Second}, func(b []byte, resp *http.Response, err error) string {
			if err != nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "2" {
				return "want 503 with Retry-After: 2"
			}
			return ""
		}},
		{Fault{Kind: Reset, After: 300}, func(b []byte, _ *http.Response, err error) string {
			if err == nil || len(b) != 300 {
				return "want an error after 300 bytes"
			}
			return ""
		}},
		{Fault{Kind: Truncate, After: 500}, func(b []byte, _ *http.Response, err error) string {
			if err == nil || len(b) != 500 {
				return "want an unexpected EOF after 500 bytes"
			}
			return ""
		}},
		{Fault{Kind: Corrupt, After: 700}, func(b []byte, _ *http.Response, err error) string {
			if err != nil || len(b) != 1000 || bytes.Equal(b, body) || b[700] != body[700]^0xff {
				return "want the whole body with byte 700 flipped"
			}
			return ""
		}},
		{Fault{Kind: Stall, After: 100}, func(b []byte, _ *http.Response, err error) string {
			if err == nil || len(b) != 100 {
				return "want the client to time out after 100 bytes"
			}
			return ""
		}},
	} {
		t.Run(tc.f.Kind.String(), func(t *testing.T) {
			p := New(up)
			defer p.Close()
			p.Add(Rule{Method: "GET", Path: "/blobs/", Times: 1, Fault: tc.f})
			c := c
			if tc.f.Kind == Stall {
				c = &http.Client{Timeout: 500 * time.Millisecond}
			}
			b, resp, err := get(t, c, p.Host)
			if msg := tc.check(b, resp, err); msg != "" {
				t.Errorf("%s: got %d bytes, err %v", msg, len(b), err)
			}
			// Times: 1, so the second request goes through.
			b, _, err = get(t, c, p.Host)
			if err != nil || !bytes.Equal(b, body) {
				t.Errorf("second request: %d bytes, %v; want the body as upstream sent it", len(b), err)
			}
			if f := p.Fired(); f[0] != 1 {
				t.Errorf("fired %v, want once", f)
			}
		})
	}
}

func TestLieHead(t *testing.T) {
	p := New(upstream(t, nil))
	defer p.Close()
	p.Add(Rule{Method: "HEAD", Path: "/blobs/", Fault: Fault{Kind: LieHead, After: 42}})
	resp, err := http.Head("http://" + p.Host + "/v2/r/blobs/sha256:x")
	if err != nil || resp.StatusCode != 200 || resp.ContentLength != 42 {
		t.Fatalf("HEAD = %v, %v; want 200 with length 42", resp, err)
	}
}

// TestRuleMatching: Exact matches the path itself only, Every fires on
// every Nth matching request, RetryAfterHeader is sent as given.
func TestRuleMatching(t *testing.T) {
	p := New(upstream(t, bytes.Repeat([]byte("x"), 1000)))
	defer p.Close()
	date := "Thu, 03 Dec 2026 12:00:30 GMT"
	p.Add(Rule{Path: "/v2/", Exact: true, Fault: Fault{Kind: Status, Code: 429, RetryAfterHeader: date}},
		Rule{Method: "GET", Path: "/blobs/", Every: 3, Fault: Fault{Kind: Status, Code: 503}})
	resp, err := http.Get("http://" + p.Host + "/v2/")
	if err != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") != date {
		t.Fatalf("GET /v2/ = %v, %v; want 429 with Retry-After %q", resp, err, date)
	}
	resp.Body.Close()
	var codes []int
	for range 6 {
		_, resp, err := get(t, http.DefaultClient, p.Host)
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, resp.StatusCode)
	}
	if want := []int{200, 200, 503, 200, 200, 503}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("blob answers %v, want %v (the exact /v2/ rule must not match them)", codes, want)
	}
	if f := p.Fired(); f[0] != 1 || f[1] != 2 {
		t.Errorf("fired %v, want [1 2]", f)
	}
}

// TestRequireTokens: without the token a request gets a Bearer challenge
// naming the proxy's token endpoint; with it, upstream answers.
func TestRequireTokens(t *testing.T) {
	p := New(upstream(t, bytes.Repeat([]byte("x"), 1000)))
	defer p.Close()
	p.RequireTokens()
	resp, err := http.Get("http://" + p.Host + "/v2/r/blobs/sha256:x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(ch, `realm="http://`+p.Host+TokenPath+`"`) {
		t.Fatalf("no token: %d %q; want 401 with a Bearer challenge", resp.StatusCode, ch)
	}
	resp, err = http.Get("http://" + p.Host + TokenPath + "?scope=repository:r:pull")
	if err != nil {
		t.Fatal(err)
	}
	var tok struct{ Token string }
	json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	req, _ := http.NewRequest("GET", "http://"+p.Host+"/v2/r/blobs/sha256:x", nil)
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(b) != 1000 {
		t.Errorf("with the token: %d, %d bytes; want upstream's 1000", resp.StatusCode, len(b))
	}
}
