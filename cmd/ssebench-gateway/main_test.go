package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// TestServe runs the gateway from a set-up file as its pod does: a request
// with the run's token reaches the upstream with the real key, a wrong
// token is refused, and the output read back with gateway.ReadReport holds
// both records and the final totals, each record once even when the output
// is read twice (a log stream opened again).
func TestServe(t *testing.T) {
	const key = "sk-real-key-0123456789"
	up, err := gatewaytest.New([]gatewaytest.Reply{{Text: "done", InputTokens: 1000, OutputTokens: 20}}, key)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	u, _ := url.Parse(up.URL + "/v1")
	token, _ := gateway.NewToken()
	conf, err := gateway.MarshalRemote(&gateway.Config{Upstream: gateway.Upstream{BaseURL: u, Key: key, Flavour: gateway.OpenAIChat}, Model: "scripted", Allowed: []string{"scripted"}}, token, gateway.Limits{MaxRequests: 5})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gateway.json")
	if err := os.WriteFile(path, conf, 0o400); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &testenv.LockedBuffer{}
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, path, "127.0.0.1:0", out, out, func(a net.Addr) { addrs <- a }) }()
	var addr net.Addr
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("the gateway ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway did not listen")
	}
	post := func(tok string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr.String()+"/chat/completions", strings.NewReader(`{"model":"scripted","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(token); code != http.StatusOK {
		t.Fatalf("a request with the run's token: %d", code)
	}
	if code := post("not-the-token-0123456789"); code != http.StatusUnauthorized {
		t.Errorf("a request with another token: %d, want 401", code)
	}
	// What an agent sends to break the report, which shares the pod's
	// log: a path that would write a forged totals line, a model name
	// over the reader's line limit, binary and a forged line in the
	// model. Each is refused and recorded; none may end the report.
	hostile := []struct{ path, body string }{
		{"/x%0Assebench-gateway%20totals%20%7B%22requests%22:99%7D", `{"model":"scripted"}`},
		{"/chat/completions", `{"model":"` + strings.Repeat("m", 2<<20) + `"}`},
		{"/chat/completions", "{\"model\":\"\x00\xff\xfe\\n\\u0000\"}"},
		{"/chat/completions", `{"model":"\nssebench-gateway totals {\"requests\":99}\n"}`},
	}
	for _, h := range hostile {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr.String()+h.path, strings.NewReader(h.body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// Lines the gateway did not sign: one over the line limit, one that
	// forges a record and the totals.
	out.Write([]byte(strings.Repeat("z", 3<<20) + "\n"))
	out.Write([]byte(gateway.RecordPrefix + `{"seq":1000,"input_tokens":5}` + "\n" + gateway.TotalsPrefix + `{"requests":99}` + "\n"))
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("the gateway's exit: %v", err)
	}
	if strings.Contains(out.String(), key) {
		t.Error("the gateway's report holds the real key")
	}

	rkey, err := gateway.ReportKey(conf)
	if err != nil {
		t.Fatal(err)
	}
	var records bytes.Buffer
	var rep gateway.Report
	for range 2 {
		if err := gateway.ReadReport(strings.NewReader(out.String()), rkey, &records, nil, 0, &rep); err != nil {
			t.Fatal(err)
		}
	}
	if rep.Records != 6 || strings.Count(records.String(), "\n") != 6 || strings.Contains(records.String(), `"seq":1000`) {
		t.Errorf("records read back: %d\n%s", rep.Records, records.String())
	}
	if rep.Unsigned == 0 {
		t.Error("the unsigned lines were not seen")
	}
	if rep.Totals == nil || rep.Totals.Requests != 1 || rep.Totals.Refused != 5 || rep.Totals.InputTokens != 1000 || rep.Totals.Limits.MaxRequests != 5 {
		t.Errorf("totals read back: %+v", rep.Totals)
	}
}
