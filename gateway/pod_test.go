package gateway_test

import (
	"bytes"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// remoteGateway is a gateway set up as the cluster's is, reporting to
// out; nothing listens upstream, so only refusals are recorded.
func remoteGateway(t *testing.T, out *bytes.Buffer) (*gateway.Gateway, []byte) {
	t.Helper()
	u, _ := url.Parse("http://127.0.0.1:1/v1")
	tok, _ := gateway.NewToken()
	conf, err := gateway.MarshalRemote(&gateway.Config{Upstream: gateway.Upstream{BaseURL: u, Key: realKey, Flavour: gateway.OpenAIChat}, Model: "scripted", Allowed: []string{"scripted"}}, tok, gateway.Limits{MaxRequests: 7})
	if err != nil {
		t.Fatal(err)
	}
	cfg, opts, err := gateway.UnmarshalRemote(conf)
	if err != nil {
		t.Fatal(err)
	}
	rw := gateway.NewReportWriter(out)
	g, err := gateway.New(cfg, append(opts, gateway.WithRecorder(rw))...)
	if err != nil {
		t.Fatal(err)
	}
	rw.Attach(g)
	key, err := gateway.ReportKey(conf)
	if err != nil {
		t.Fatal(err)
	}
	return g, key
}

func send(g *gateway.Gateway, path, body string) int {
	req := httptest.NewRequest(http.MethodPost, "http://gw"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+g.Token())
	w := httptest.NewRecorder()
	g.ServeHTTP(w, req)
	return w.Code
}

// TestHostileGatewayReport: whatever an agent sends, and whatever else is in
// the gateway's output, the host reads every record and the last totals
// back, and nothing it did not sign.
func TestHostileGatewayReport(t *testing.T) {
	junk := make([]byte, 3<<20)
	rand.Read(junk)
	for _, c := range []struct {
		name string
		// agent sends requests; noise is written to the output after them
		agent func(g *gateway.Gateway)
		noise string
	}{
		{name: "a model name over 1 MiB", agent: func(g *gateway.Gateway) {
			send(g, "/chat/completions", `{"model":"`+strings.Repeat("m", 2<<20)+`"}`)
		}},
		{name: "a path over 1 MiB", agent: func(g *gateway.Gateway) {
			send(g, "/"+strings.Repeat("p", 2<<20), `{}`)
		}},
		{name: "binary in the model", agent: func(g *gateway.Gateway) {
			send(g, "/chat/completions", "{\"model\":\"\\u0000\\n\\r\\u2028"+string(junk[:4096])+"\"}")
			send(g, "/chat/completions", `{"model":"\u0000\n`+gateway.TotalsPrefix+`{\"requests\":99}"}`)
		}},
		{name: "binary in the log", noise: string(junk) + "\n" + string(junk[:1000])},
		{name: "a forged record and totals", noise: gateway.RecordPrefix + `{"seq":500,"input_tokens":1}` + "\n" + gateway.TotalsPrefix + `{"requests":99}` + "\n"},
		{name: "a record signed with another key", noise: gateway.RecordPrefix + strings.Repeat("ab", 32) + ` {"seq":500}` + "\n" + gateway.TotalsPrefix + strings.Repeat("00", 32) + ` {"requests":99}` + "\n"},
		{name: "a log line over 1 MiB", noise: strings.Repeat("x", 2<<20) + "\n" + gateway.RecordPrefix + strings.Repeat("y", 2<<20) + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hostile.Case(t, "gateway: report")
			var out bytes.Buffer
			g, key := remoteGateway(t, &out)
			if code := send(g, "/chat/completions", `{"model":"other"}`); code != http.StatusForbidden {
				t.Fatalf("the first request: %d", code)
			}
			if c.agent != nil {
				c.agent(g)
			}
			out.WriteString(c.noise)
			// A record after the noise must still be read.
			send(g, "/files", `{}`)
			want := g.Totals()
			var records bytes.Buffer
			var rep gateway.Report
			if err := gateway.ReadReport(bytes.NewReader(out.Bytes()), key, &records, nil, 0, &rep); err != nil {
				t.Fatalf("the report ends early: %v", err)
			}
			n := want.Refused + want.Requests
			if rep.Records != n || strings.Count(records.String(), "\n") != n {
				t.Errorf("%d records read back, want %d", rep.Records, n)
			}
			if rep.Totals == nil || *rep.Totals != want {
				t.Errorf("totals read back %+v, want %+v", rep.Totals, want)
			}
			if strings.Contains(records.String(), `"seq":500`) {
				t.Error("a forged record was read as the gateway's")
			}
		})
	}
}
