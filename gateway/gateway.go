package gateway

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net/http"
	"net/http/httputil"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// Gateway is one run's model gateway. It is an http.Handler; Listen serves
// it on a Unix socket.
type Gateway struct {
	cfg   Config
	opts  *options
	proxy *httputil.ReverseProxy

	mu      sync.Mutex
	seq     int
	started int // requests forwarded or in flight, for MaxRequests
	totals  Totals
	// reserved is the most the requests in flight may still add to
	// the totals: a request is let through only while the totals plus
	// it stay under the limits, so parallel requests overshoot a limit
	// by at most one request's maximum.
	reserved     int64
	reservedCost float64
	// ledgerHeld and ledgerHeldCost are the part of reserved set aside
	// in the evaluation's ledger, which caps what one run holds.
	ledgerHeld     int64
	ledgerHeldCost float64
	// slots holds one token per generating request in flight: at most
	// Limits.MaxConcurrent at once, the others wait their turn.
	slots chan struct{}

	srv *server
	// revoked is set when the phase ends (revoke.go).
	revoked atomic.Bool
}

// Totals sums a run's model use; it goes into result.json and summary.json
// as model_usage.
type Totals struct {
	// Requests is how many requests were forwarded upstream.
	Requests int `json:"requests"`
	// Failed is how many forwarded requests failed: an error status from
	// the upstream, no answer, or a reply cut short.
	Failed int `json:"failed"`
	// Refused is how many requests the gateway answered itself: a wrong
	// token (401), a model the run does not allow (403), a limit (429).
	Refused int `json:"refused"`
	// Estimated is how many forwarded requests got no usage from the
	// upstream and were counted by the gateway's estimate.
	Estimated int `json:"estimated,omitempty"`
	Usage
	CostUSD float64 `json:"cost_usd"`
	// LimitReached names the first limit that refused a request:
	// max_requests, max_tokens, max_cost or budget (the evaluation's).
	LimitReached string `json:"limit_reached,omitempty"`
	Limits       Limits `json:"limits"`
	Model        string `json:"model,omitempty"`
	Flavour      string `json:"flavour"`
}

// Record is one line of model.jsonl: one request the gateway answered.
type Record struct {
	Seq    int       `json:"seq"`
	Time   time.Time `json:"time"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	// Model is the model the request asked for; Answered is the one the
	// upstream says answered, when it says.
	Model    string `json:"model,omitempty"`
	Answered string `json:"answered_by,omitempty"`
	Stream   bool   `json:"stream"`
	Status   int    `json:"status"`
	// LatencyMS is the time from the request to the reply's last byte;
	// FirstByteMS to the upstream's first byte of the body.
	LatencyMS   float64 `json:"latency_ms"`
	FirstByteMS float64 `json:"first_byte_ms,omitempty"`
	Usage
	// Estimated says the upstream gave no usage (or a reply cut short
	// gave less than it sent): the counts are the gateway's estimate.
	Estimated bool    `json:"usage_estimated,omitempty"`
	CostUSD   float64 `json:"cost_usd,omitempty"`
	// Refused says why the gateway answered itself: token, endpoint,
	// model, max_requests, max_tokens, max_cost, budget, body.
	Refused string `json:"refused,omitempty"`
	// Failed marks a forwarded request that failed; Error says how.
	Failed bool   `json:"failed,omitempty"`
	Error  string `json:"error,omitempty"`
}

// CheckPrices refuses a set-up where what (a cost limit, "--max-cost")
// cannot be kept: a model the run allows has no price. orElse ends the
// message with another way out (", or ...").
func (c *Config) CheckPrices(what, orElse string) error {
	if len(c.Allowed) == 0 {
		return fmt.Errorf("%s needs the run's models and their prices: pass --model with a model file that has prices%s", what, orElse)
	}
	for _, m := range c.Allowed {
		if _, ok := c.Prices[m]; !ok {
			return fmt.Errorf("%s needs the price of model %s: add it under prices: in %s%s", what, m, c.Source, orElse)
		}
	}
	return nil
}

// New returns the gateway of a run on cfg's upstream. --max-cost needs a
// price for every model the run allows.
func New(cfg *Config, opts ...Option) (*Gateway, error) {
	if cfg == nil || cfg.Upstream.BaseURL == nil {
		return nil, ErrNoUpstream
	}
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	if o.limits.MaxCost > 0 {
		if err := cfg.CheckPrices("--max-cost", ""); err != nil {
			return nil, err
		}
	}
	if o.ledger != nil && o.ledger.budget.USD > 0 {
		if err := cfg.CheckPrices("a budget in dollars", ", or give --budget in tokens"); err != nil {
			return nil, err
		}
	}
	f, err := ParseFlavour(string(cfg.Upstream.Flavour))
	if err != nil {
		return nil, err
	}
	g := &Gateway{cfg: *cfg, opts: o, slots: make(chan struct{}, o.limits.concurrent())}
	g.cfg.Upstream.Flavour = f
	g.totals.Limits, g.totals.Model, g.totals.Flavour = o.limits, cfg.Model, string(f)
	g.proxy = &httputil.ReverseProxy{
		Rewrite:        g.rewrite,
		Transport:      o.transport,
		FlushInterval:  -1, // every write reaches the agent at once: streams stay live
		ModifyResponse: g.modifyResponse,
		ErrorHandler:   g.proxyError,
		ErrorLog:       log.New(o.log, "gateway: ", 0),
	}
	return g, nil
}

// Token returns the per-run token the container presents.
func (g *Gateway) Token() string { return g.opts.token }

// Totals returns the sums so far.
func (g *Gateway) Totals() Totals {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.totals
}

// exchange is one request's state, carried in its context.
type exchange struct {
	rec     Record
	start   time.Time
	meter   bool  // a generating request: its usage is counted
	reqSize int64 // the forwarded body's size, for the estimate
	// respSize counts the reply's bytes as the upstream sent them.
	respSize int64
	// reserved and reservedCost are what reserve set aside; ledgered
	// says they are set aside in the evaluation's ledger too.
	reserved     int64
	reservedCost float64
	ledgered     bool
	// stripUsage takes out of a chat stream the usage the gateway asked
	// for and the agent did not.
	stripUsage bool
	// eof says the upstream's reply was read to its end.
	eof     bool
	scanner usageScanner
	sse     *sseScanner
	body    *bytes.Buffer // a JSON reply, kept (bounded) to read its usage
	err     error
	idle    *time.Timer
	ctx     context.Context // the upstream exchange's, with its deadlines
	mu      sync.Mutex
}

type ctxKey struct{}

// errIdle is the cause of an upstream exchange ended by the idle timeout.
var errIdle = errors.New("the upstream sent nothing for too long")

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == contract.GatewayRevokePath {
		g.serveRevoke(w, r)
		return
	}
	x := &exchange{start: time.Now()}
	x.rec.Time = x.start.UTC()
	// The method and path are the agent's, of any length: a record
	// keeps them cut.
	x.rec.Method, x.rec.Path = cut(r.Method, 20), cut(r.URL.Path, maxPathText)
	defer g.finish(x)

	if !g.authorized(r) {
		g.refuse(w, x, http.StatusUnauthorized, "token", "invalid_api_key",
			"the gateway did not accept this API key: use the run's SSE_API_KEY")
		return
	}
	if g.refuseRevoked(w, x) {
		return
	}
	// A switch to another protocol would leave the gateway blind.
	if r.Header.Get("Upgrade") != "" {
		g.refuse(w, x, http.StatusForbidden, "endpoint", "endpoint_not_allowed",
			"the model gateway does not switch protocols (Upgrade): use plain HTTP requests")
		return
	}
	ep, path, why := route(g.cfg.Upstream.Flavour, r)
	if why != "" {
		g.refuse(w, x, http.StatusForbidden, "endpoint", "endpoint_not_allowed", why)
		return
	}
	x.rec.Path = path
	path = upstreamPath(g.cfg.Upstream.BaseURL, path)
	// A body that says it is too big is refused unread; one that does
	// not say is read up to the cap.
	var body []byte
	var err error
	if r.ContentLength <= maxRequestBody {
		if body, err = io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1)); err != nil {
			g.refuse(w, x, http.StatusBadRequest, "body", "invalid_request", "reading the request body: "+err.Error())
			return
		}
	}
	if r.ContentLength > maxRequestBody || len(body) > maxRequestBody {
		g.refuse(w, x, http.StatusRequestEntityTooLarge, "body", "request_too_large",
			fmt.Sprintf("the request body is larger than %d MiB", maxRequestBody>>20))
		return
	}
	var q *genRequest
	if ep.generate {
		if q, err = g.readRequest(r, body); err != nil {
			g.refuse(w, x, http.StatusBadRequest, "body", "invalid_request", err.Error())
			return
		}
		x.rec.Model, x.rec.Stream = cut(q.Model, maxModelText), q.Stream
		x.meter = true
		if len(g.cfg.Allowed) > 0 && !slices.Contains(g.cfg.Allowed, q.Model) {
			g.refuse(w, x, http.StatusForbidden, "model", "model_not_allowed",
				fmt.Sprintf("model %q is not allowed in this run: use %s", cut(q.Model, maxModelText), strings.Join(g.cfg.Allowed, " or ")))
			return
		}
		// The chat API reports a stream's usage only when asked to; the
		// other APIs always do. The gateway always asks, whatever the
		// agent's stream_options say, and hides the answer from an agent
		// that did not ask.
		if q.Stream && g.cfg.Upstream.Flavour == OpenAIChat {
			if body, err = q.withStreamUsage(); err != nil {
				g.refuse(w, x, http.StatusBadRequest, "body", "invalid_request", err.Error())
				return
			}
			x.stripUsage = !q.IncludeUsage
		}
	} else if len(body) > 0 {
		g.refuse(w, x, http.StatusBadRequest, "body", "invalid_request",
			fmt.Sprintf("%s %s takes no request body", r.Method, ep.path))
		return
	}
	x.reqSize = int64(len(body))
	if q != nil {
		// Parallel requests wait for a slot: each one set aside at its
		// maximum, many at once would refuse each other, and an agent
		// has no need of more at once.
		select {
		case g.slots <- struct{}{}:
			defer func() { <-g.slots }()
		case <-r.Context().Done():
			g.refuse(w, x, http.StatusTooManyRequests, "max_concurrent", "max_concurrent",
				fmt.Sprintf("the request waited for one of this run's %d model requests at once to end and was cancelled", cap(g.slots)))
			return
		}
	}
	if code, msg := g.reserve(x, q); code != "" {
		g.refuse(w, x, http.StatusTooManyRequests, code, code, msg)
		return
	}

	ctx, cancel := context.WithTimeoutCause(r.Context(), g.opts.requestTimeout,
		fmt.Errorf("the upstream exchange took longer than %s", g.opts.requestTimeout))
	defer cancel()
	ctx, cancelCause := context.WithCancelCause(ctx)
	defer cancelCause(nil)
	x.ctx = ctx
	x.idle = time.AfterFunc(g.opts.idleTimeout, func() { cancelCause(errIdle) })
	defer x.idle.Stop()

	out := r.Clone(context.WithValue(ctx, ctxKey{}, x))
	out.URL.Path, out.URL.RawPath = path, ""
	out.Trailer = nil
	if ep.generate {
		// The upstream reads the body as the JSON the gateway read.
		out.Header.Set("Content-Type", "application/json")
	}
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.Header.Del("Content-Length")
	g.proxy.ServeHTTP(w, out)
}

// authorized checks the per-run token in constant time, wherever the
// flavour's clients put it.
func (g *Gateway) authorized(r *http.Request) bool {
	var got string
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, tok, _ := strings.Cut(a, " ")
		if strings.EqualFold(scheme, "Bearer") {
			got = strings.TrimSpace(tok)
		}
	}
	if got == "" {
		got = firstNonEmpty(r.Header.Get("X-Api-Key"), r.Header.Get("Api-Key"))
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(g.opts.token)) == 1
}

// readRequest reads a generating request's body strictly: a JSON
// object, sent as one, and no encoding the gateway would not read.
func (g *Gateway) readRequest(r *http.Request, body []byte) (*genRequest, error) {
	// No type is read as JSON, as the APIs do; any other type is not.
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return nil, fmt.Errorf("%w: send it as Content-Type: application/json", errBadBody)
		}
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return nil, fmt.Errorf("%w: send it without Content-Encoding", errBadBody)
	}
	return parseRequest(g.cfg.Upstream.Flavour, body)
}

// reserve counts a request against the limits and sets aside the most it
// may add to them; it returns the limit's name and a message when one is
// reached, counting what the requests in flight may still add.
func (g *Gateway) reserve(x *exchange, q *genRequest) (string, string) {
	if q != nil {
		out := g.cfg.maxOutput(q.MaxTokens)
		in := estimateTokens(x.reqSize)
		x.reserved = in + out*q.N
		if p, ok := g.cfg.Prices[firstNonEmpty(q.Model, g.cfg.Model)]; ok {
			x.reservedCost = p.Cost(in, out*q.N)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.opts.limits
	code, msg := "", ""
	switch {
	case l.MaxRequests > 0 && g.started >= l.MaxRequests:
		code, msg = "max_requests", fmt.Sprintf("this run's limit of %d model requests is reached (--max-requests)", l.MaxRequests)
	case l.MaxTokens > 0 && g.totals.TotalTokens+g.reserved >= l.MaxTokens:
		code, msg = "max_tokens", fmt.Sprintf("this run's limit of %d tokens is reached: %d used, up to %d more in requests under way (--max-tokens)", l.MaxTokens, g.totals.TotalTokens, g.reserved)
	case l.MaxCost > 0 && g.totals.CostUSD+g.reservedCost >= l.MaxCost:
		code, msg = "max_cost", fmt.Sprintf("this run's limit of $%.4f is reached: $%.4f spent, up to $%.4f more in requests under way (--max-cost)", l.MaxCost, g.totals.CostUSD, g.reservedCost)
	}
	// The evaluation's budget is shared with other runs' gateways: it is
	// asked last, so that a request this run refuses takes nothing of it.
	if code == "" && q != nil && g.opts.ledger != nil {
		if ok, why := g.opts.ledger.reserve(g.ledgerHeld, g.ledgerHeldCost, x.reserved, x.reservedCost); !ok {
			code, msg = "budget", why
		} else {
			x.ledgered = true
			g.ledgerHeld += x.reserved
			g.ledgerHeldCost += x.reservedCost
		}
	}
	if code != "" {
		x.reserved, x.reservedCost = 0, 0
		if g.totals.LimitReached == "" {
			g.totals.LimitReached = code
		}
		return code, msg
	}
	g.started++
	g.reserved += x.reserved
	g.reservedCost += x.reservedCost
	return "", ""
}

// credentialHeaders are the ways a client may send a key; none of the
// container's reaches the upstream.
var credentialHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "Proxy-Authorization", "Cookie"}

// rewrite points the request at the upstream and swaps the container's
// token for the real key.
func (g *Gateway) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(g.cfg.Upstream.BaseURL)
	// The query was checked against the endpoint's; it goes on as the
	// gateway read it.
	q := pr.In.URL.Query().Encode()
	pr.Out.URL.RawQuery = g.cfg.Upstream.BaseURL.RawQuery
	if q != "" {
		if pr.Out.URL.RawQuery != "" {
			pr.Out.URL.RawQuery += "&"
		}
		pr.Out.URL.RawQuery += q
	}
	h := pr.Out.Header
	for k := range h {
		if !forwardHeader(k) {
			h.Del(k)
		}
	}
	for _, k := range credentialHeaders {
		h.Del(k)
	}
	// The transport then asks for gzip itself and decompresses, so the
	// usage can be read; the agent's side is a local socket.
	h.Del("Accept-Encoding")
	key := g.cfg.Upstream.Key
	switch g.cfg.Upstream.Flavour {
	case AnthropicMessages:
		if key != "" {
			h.Set("X-Api-Key", key)
		}
		if h.Get("Anthropic-Version") == "" {
			h.Set("Anthropic-Version", "2023-06-01")
		}
	default:
		if key != "" {
			h.Set("Authorization", "Bearer "+key)
		}
	}
}

// modifyResponse meters the reply's body as it streams to the agent.
func (g *Gateway) modifyResponse(resp *http.Response) error {
	x, _ := resp.Request.Context().Value(ctxKey{}).(*exchange)
	if x == nil {
		return nil
	}
	x.touch(g.opts.idleTimeout)
	x.rec.Status = resp.StatusCode
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		x.rec.Stream = true
		x.sse = &sseScanner{u: &x.scanner}
	} else {
		x.body = &bytes.Buffer{}
	}
	resp.Body = &meteredBody{rc: resp.Body, x: x, idle: g.opts.idleTimeout}
	if x.meter {
		// Chunked, so that the reply's end reaches the agent only once
		// the handler has returned and finish has settled what the
		// request set aside: an agent that reads a reply to its end and
		// sends the next one at once must not find the first still
		// holding its share of the budget (a Content-Length let the
		// agent see the last byte first, and its next request was
		// refused: "this run holds … in requests under way").
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	}
	if x.stripUsage && x.sse != nil {
		resp.Body = newUsageStripper(resp.Body)
	}
	return nil
}

// proxyError answers when the upstream could not be reached or its
// response headers never came.
func (g *Gateway) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	x, _ := r.Context().Value(ctxKey{}).(*exchange)
	if x != nil {
		err = x.cause(r.Context(), err)
		x.fail(err)
	}
	status := http.StatusBadGateway
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errIdle) {
		status = http.StatusGatewayTimeout
	}
	if x != nil {
		x.rec.Status = status
	}
	// Quoted: the path is the agent's, and a newline in it must not start
	// a line of its own in the log (a remote gateway's report shares it).
	fmt.Fprintf(g.opts.log, "gateway: %s %q: %v\n", r.Method, r.URL.Path, err)
	g.writeError(w, status, "upstream_error", "the model gateway could not get an answer from the upstream: "+err.Error())
}

// refuse answers a request the gateway does not forward.
func (g *Gateway) refuse(w http.ResponseWriter, x *exchange, status int, why, code, msg string) {
	x.rec.Status, x.rec.Refused, x.rec.Error = status, why, msg
	g.writeError(w, status, code, msg)
}

// writeError writes an error body in the upstream flavour's shape, so the
// agent's client shows the message. x-should-retry: false tells the
// OpenAI and Anthropic SDKs not to retry a refusal.
func (g *Gateway) writeError(w http.ResponseWriter, status int, code, msg string) {
	var body any
	if g.cfg.Upstream.Flavour == AnthropicMessages {
		typ := map[int]string{401: "authentication_error", 403: "permission_error", 429: "rate_limit_error", 413: "request_too_large"}[status]
		if typ == "" {
			typ = "api_error"
		}
		body = map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}}
	} else {
		body = map[string]any{"error": map[string]any{"message": msg, "type": "ssebench_gateway", "code": code}}
	}
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusTooManyRequests || status == http.StatusForbidden || status == http.StatusUnauthorized {
		w.Header().Set("X-Should-Retry", "false")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// finish completes a request's record, adds it to the totals and writes
// it. It runs deferred, also when the proxy aborts a reply cut short.
func (g *Gateway) finish(x *exchange) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.sse != nil {
		x.sse.Close()
	} else if x.body != nil {
		x.scanner.data(x.body.Bytes())
	}
	r := &x.rec
	r.LatencyMS = ms(time.Since(x.start))
	r.Usage = x.scanner.result()
	r.Answered = cut(x.scanner.model, maxModelText)
	if x.meter && r.Refused == "" {
		// A reply not read to its end (the upstream broke off, or the
		// agent hung up once it had what it wanted) may have cost more
		// than the usage seen so far says.
		r.Usage, r.Estimated = settle(r.Usage, x.scanner.seen, r.Status, x.err != nil || !x.eof, x.reqSize, x.respSize)
	}
	if r.Refused == "" {
		if r.Status >= 400 && x.err == nil {
			x.err = fmt.Errorf("the upstream answered %d %s: %s", r.Status, http.StatusText(r.Status), x.scanner.errText)
		} else if x.err == nil && x.scanner.errText != "" && r.Stream {
			x.err = fmt.Errorf("the upstream's stream ended in an error: %s", x.scanner.errText)
		}
		if x.err != nil {
			r.Failed, r.Error = true, cut(x.err.Error(), maxErrorText)
		}
	}
	g.mu.Lock()
	g.seq++
	r.Seq = g.seq
	if price, ok := g.price(x.scanner.model, x.rec.Model); ok {
		r.CostUSD = price.Cost(r.InputTokens, r.OutputTokens)
	}
	g.reserved -= x.reserved
	g.reservedCost -= x.reservedCost
	if x.ledgered {
		g.opts.ledger.settle(x.reserved, x.reservedCost, r.TotalTokens, r.CostUSD)
		g.ledgerHeld -= x.reserved
		g.ledgerHeldCost -= x.reservedCost
	}
	t := &g.totals
	if r.Refused != "" {
		t.Refused++
	} else {
		t.Requests++
		if r.Failed {
			t.Failed++
		}
		if r.Estimated {
			t.Estimated++
		}
		t.InputTokens += r.InputTokens
		t.OutputTokens += r.OutputTokens
		t.TotalTokens += r.TotalTokens
		t.CostUSD += r.CostUSD
	}
	line, err := json.Marshal(r)
	if err == nil {
		_, err = g.opts.record.Write(append(line, '\n'))
	}
	g.mu.Unlock()
	if err != nil {
		fmt.Fprintf(g.opts.log, "gateway: recording request %d: %v\n", r.Seq, err)
	}
}

// price is the price of the model that answered, as the reply names it:
// an upstream that serves another model than the one asked for is paid
// at that model's price. A reply that names no model, or one without a
// price, is paid at the price of the model asked for, else the run's.
func (g *Gateway) price(answered, asked string) (Price, bool) {
	for _, m := range []string{answered, asked, g.cfg.Model} {
		if p, ok := g.cfg.Prices[m]; ok && m != "" {
			return p, true
		}
	}
	return Price{}, false
}

// maxModelText bounds a model name kept in a record or a message: the
// name is the agent's, and may be of any length.
const maxModelText = 200

// maxPathText bounds a path kept in a record.
const maxPathText = 300

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// touch records progress from the upstream and restarts the idle timer.
func (x *exchange) touch(idle time.Duration) {
	if x.idle != nil {
		x.idle.Reset(idle)
	}
}

func (x *exchange) fail(err error) {
	if x.err == nil {
		x.err = err
	}
}

// cause returns why the exchange's context ended, when it did, else err.
func (x *exchange) cause(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return fmt.Errorf("%w (%v)", c, err)
	}
	return err
}

// meteredBody passes the upstream's reply through, reading usage on the
// way and keeping the idle timer alive.
type meteredBody struct {
	rc    io.ReadCloser
	x     *exchange
	idle  time.Duration
	first bool
}

func (b *meteredBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	x := b.x
	x.mu.Lock()
	defer x.mu.Unlock()
	if n > 0 {
		if !b.first {
			b.first = true
			x.rec.FirstByteMS = ms(time.Since(x.start))
		}
		x.touch(b.idle)
		x.respSize += int64(n)
		if x.sse != nil {
			x.sse.Write(p[:n])
		} else if x.body.Len() < maxRequestBody {
			x.body.Write(p[:n])
		}
	}
	if err == io.EOF {
		x.eof = true
	}
	if err != nil && err != io.EOF {
		// The proxy aborts the agent's connection after this: the agent
		// sees its reply cut short, and the record says why.
		x.fail(fmt.Errorf("the upstream's reply broke off: %w", x.cause(x.ctx, err)))
	}
	return n, err
}

func (b *meteredBody) Close() error { return b.rc.Close() }
