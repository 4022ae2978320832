package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
)

// TestRevoke spends a run's token as the entrypoint does at the phase end:
// a wrong token cannot, the run's token can, and from then on the gateway
// refuses it with 403 and a one-line reason in model.jsonl, upstream
// untouched; another run's gateway and token go on.
func TestRevoke(t *testing.T) {
	script := []gatewaytest.Reply{{Text: "hello", InputTokens: 10, OutputTokens: 2}}
	f := newFixture(t, gateway.OpenAIChat, script, nil)
	other := newFixture(t, gateway.OpenAIChat, script, nil)

	if resp, _, err := f.post(t, "/chat/completions", f.gw.Token(), false, chatBody(false)); err != nil || resp.StatusCode != 200 {
		t.Fatalf("before the revoke: %v %v", resp, err)
	}
	if resp, _, err := f.post(t, contract.GatewayRevokePath, other.gw.Token(), false, nil); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a revoke with another run's token: %v %v, want 401", resp, err)
	}
	if f.gw.Revoked() {
		t.Fatal("another run's token revoked this run's")
	}
	if resp, _, err := f.post(t, contract.GatewayRevokePath, f.gw.Token(), false, nil); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("the revoke: %v %v, want 204", resp, err)
	}
	resp, data, err := f.post(t, "/chat/completions", f.gw.Token(), false, chatBody(false))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(data), "revoked") {
		t.Errorf("after the revoke: %d %s, want 403 revoked", resp.StatusCode, data)
	}
	if n := len(f.up.Received()); n != 1 {
		t.Errorf("the upstream got %d requests, want the one before the revoke", n)
	}
	recs := f.record.waitRecords(t, 2)
	if len(recs) != 2 || recs[1].Status != 403 || recs[1].Refused != "revoked" || !strings.Contains(recs[1].Error, "revoked when the agent phase ended") {
		t.Errorf("model.jsonl = %+v, want the request, then the refusal (the revoke itself is not a model request)", recs)
	}
	if tot := f.gw.Totals(); tot.Requests != 1 || tot.Refused != 1 {
		t.Errorf("totals %+v, want 1 request and 1 refused", tot)
	}
	if resp, _, err := other.post(t, "/chat/completions", other.gw.Token(), false, chatBody(false)); err != nil || resp.StatusCode != 200 {
		t.Errorf("another run after this run's revoke: %v %v, want 200", resp, err)
	}
}
