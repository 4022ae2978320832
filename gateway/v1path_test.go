package gateway_test

import (
	"net/url"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
)

// TestV1Prefix: an SDK given the gateway as its base URL adds /v1 itself
// (Claude Code posts /v1/messages); the upstream gets the path once,
// whether its base URL ends in /v1 or not, and the record keeps the
// agent's path.
func TestV1Prefix(t *testing.T) {
	body := flavourCases[2].body(true)
	for _, c := range []struct {
		base, agent, want string
	}{
		{"/v1", "/v1/messages", "/v1/messages"},
		{"/v1/", "/v1/messages", "/v1/messages"},
		{"/v1", "/messages", "/v1/messages"},
		{"", "/v1/messages", "/v1/messages"},
		{"", "/messages", "/messages"},
		{"/anthropic/v1", "/v1/messages", "/anthropic/v1/messages"},
		// Only a whole /v1 segment is taken off.
		{"/xv1", "/v1/messages", "/xv1/v1/messages"},
	} {
		f := newFixture(t, gateway.AnthropicMessages, []gatewaytest.Reply{{Text: "hi"}}, func(cfg *gateway.Config) {
			u, _ := url.Parse(cfg.Upstream.BaseURL.Scheme + "://" + cfg.Upstream.BaseURL.Host + c.base)
			cfg.Upstream.BaseURL = u
		})
		resp, data, err := f.post(t, c.agent, f.gw.Token(), true, body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Errorf("base %q, agent path %s: status %d: %s", c.base, c.agent, resp.StatusCode, data)
			continue
		}
		got := f.up.Received()
		if len(got) != 1 || got[0].Path != c.want {
			t.Errorf("base %q, agent path %s: upstream got %+v, want one request for %s", c.base, c.agent, got, c.want)
			continue
		}
		if recs := f.record.waitRecords(t, 1); len(recs) != 1 || recs[0].Path != c.agent {
			t.Errorf("base %q: records %+v, want the agent's path %s", c.base, recs, c.agent)
		}
	}
}
