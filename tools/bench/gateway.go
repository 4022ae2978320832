package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
	"github.com/42-b3yond-6ug/ssebench/sserun"
)

// gatewayResult is what `bench gateway` measures.
type gatewayResult struct {
	Requests int `json:"requests"`
	// Median latency of a whole non-streaming request, direct to the
	// upstream and through forwarder and gateway, and the median of the
	// paired differences.
	DirectMedianMS  float64 `json:"direct_median_ms"`
	GatewayMedianMS float64 `json:"gateway_median_ms"`
	AddedMedianMS   float64 `json:"added_median_ms"`
	// The same for the first byte of a streamed reply's body.
	DirectFirstByteMS  float64 `json:"direct_first_byte_median_ms"`
	GatewayFirstByteMS float64 `json:"gateway_first_byte_median_ms"`
	AddedFirstByteMS   float64 `json:"added_first_byte_median_ms"`
}

// runGateway is `bench gateway`: the scripted model server on loopback,
// the gateway on a Unix socket and the entrypoint's forwarder on TCP in
// front of it, as an agent in a restricted run reaches its model. Each
// round sends the same request direct and through the gateway, in turn.
// Goals: under 2 ms added per request, under 5 ms added to a stream's
// first byte.
func runGateway(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	n := fs.Int("n", 300, "requests of each kind")
	jsonOut := fs.String("json", "", "also write the figures to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	up, err := gatewaytest.New([]gatewaytest.Reply{{Text: "A scripted answer of a realistic length, streamed in small pieces the way a model streams its tokens to a client."}}, "sk-upstream")
	if err != nil {
		return err
	}
	defer up.Close()
	u, _ := url.Parse(up.URL + "/v1")
	gw, err := gateway.New(&gateway.Config{Upstream: gateway.Upstream{BaseURL: u, Key: "sk-upstream", Flavour: gateway.OpenAIChat}})
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "gwbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "model.sock")
	if err := gw.Listen(sock); err != nil {
		return err
	}
	defer gw.Close()
	fwd, err := sserun.Forward("127.0.0.1:0", sock)
	if err != nil {
		return err
	}
	defer fwd.Close()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
	direct := target{base: up.URL + "/v1", key: "sk-upstream"}
	via := target{base: "http://" + fwd.Addr().(*net.TCPAddr).String(), key: gw.Token()}
	// Warm both paths' connections.
	for i := 0; i < 20; i++ {
		for _, tg := range []target{direct, via} {
			if _, _, err := tg.do(ctx, client, i%2 == 0); err != nil {
				return err
			}
		}
	}
	var d, g, dfb, gfb, add, addfb []float64
	for i := 0; i < *n; i++ {
		for _, stream := range []bool{false, true} {
			td, fd, err := direct.do(ctx, client, stream)
			if err != nil {
				return err
			}
			tg, fg, err := via.do(ctx, client, stream)
			if err != nil {
				return err
			}
			if stream {
				dfb, gfb, addfb = append(dfb, fd), append(gfb, fg), append(addfb, fg-fd)
			} else {
				d, g, add = append(d, td), append(g, tg), append(add, tg-td)
			}
		}
	}
	r := gatewayResult{Requests: *n,
		DirectMedianMS: median(d), GatewayMedianMS: median(g), AddedMedianMS: median(add),
		DirectFirstByteMS: median(dfb), GatewayFirstByteMS: median(gfb), AddedFirstByteMS: median(addfb)}
	fmt.Printf("gateway: %d requests of each kind, through the forwarder (TCP) and the gateway (Unix socket) to a loopback upstream\n", *n)
	fmt.Printf("  whole request   direct %.3f ms   via gateway %.3f ms   added (median of pairs) %.3f ms   goal < 2 ms: %s\n",
		r.DirectMedianMS, r.GatewayMedianMS, r.AddedMedianMS, verdict(r.AddedMedianMS < 2))
	fmt.Printf("  stream 1st byte direct %.3f ms   via gateway %.3f ms   added (median of pairs) %.3f ms   goal < 5 ms: %s\n",
		r.DirectFirstByteMS, r.GatewayFirstByteMS, r.AddedFirstByteMS, verdict(r.AddedFirstByteMS < 5))
	if t := gw.Totals(); t.Failed != 0 {
		return fmt.Errorf("%d requests through the gateway failed", t.Failed)
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(r, "", "  ")
		return os.WriteFile(*jsonOut, append(b, '\n'), 0o644)
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

type target struct{ base, key string }

var benchBody = []byte(`{"model":"scripted","messages":[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"Fix the bug in the parser."}]}`)
var benchStreamBody = []byte(`{"model":"scripted","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"Fix the bug in the parser."}]}`)

// do sends one chat request and returns the time to the whole reply and
// to the first byte of its body, in milliseconds.
func (tg target) do(ctx context.Context, c *http.Client, stream bool) (total, first float64, err error) {
	body := benchBody
	if stream {
		body = benchStreamBody
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tg.base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+tg.key)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.Peek(1); err != nil {
		return 0, 0, fmt.Errorf("reading the first byte from %s: %w", tg.base, err)
	}
	first = msSince(start)
	if _, err := io.Copy(io.Discard, br); err != nil {
		return 0, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("%s answered %d", tg.base, resp.StatusCode)
	}
	return msSince(start), first, nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Nanoseconds()) / 1e6 }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
