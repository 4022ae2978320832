package pipeline

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
)

type noCluster struct{ Cluster }

// TestRunGatewayKeepsLedger: a run's gateway counts against the
// evaluation's ledger it is given (a spent budget refuses the request with
// the reason), and a cluster run, whose gateway is a pod with no share
// in the ledger, is refused.
func TestRunGatewayKeepsLedger(t *testing.T) {
	up, err := gatewaytest.New([]gatewaytest.Reply{{Text: "hi", InputTokens: 5, OutputTokens: 5}}, "sk-up")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	l, err := gateway.NewLedger(gateway.Budget{Tokens: 100}, 100, 0) // spent already
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{Home: t.TempDir()}
	req := RunRequest{Model: "scripted", BaseURL: up.URL + "/v1", APIKey: "sk-up", Ledger: l, Lookup: func(string) string { return "" }}
	rg, err := e.startGateway(&req, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rg.close()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", filepath.Join(rg.dir, gatewaySocketName))
	}}}
	hr, _ := http.NewRequest(http.MethodPost, "http://gw/chat/completions", strings.NewReader(`{"model":"scripted","messages":[{"role":"user","content":"x"}]}`))
	hr.Header.Set("Authorization", "Bearer "+rg.gw.Token())
	resp, err := client.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "the evaluation's budget of 100 tokens is spent") || len(up.Received()) != 0 {
		t.Errorf("a request on a spent budget: %d %s (upstream got %d)", resp.StatusCode, body, len(up.Received()))
	}

	req = RunRequest{Model: "scripted", BaseURL: up.URL + "/v1", APIKey: "sk-up", Ledger: l, Cluster: noCluster{}, Lookup: func(string) string { return "" }}
	if _, err := e.startGateway(&req, t.TempDir()); err == nil || !strings.Contains(err.Error(), "cannot hold on the Kubernetes backend") {
		t.Errorf("a cluster run with a ledger: %v", err)
	}
}
