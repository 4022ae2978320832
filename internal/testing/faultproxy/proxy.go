// Package faultproxy is a reverse proxy on loopback that misbehaves on
// purpose in front of a real registry: tests point ssebench at it to see
// what a push, a pull, an assembly or a mirror does when the network or
// the registry fails part-way (SPEC.md section 12's hostile registries).
//
// A Proxy forwards every request to its upstream unchanged until a Rule
// matches; the rule's Fault then decides the answer: an error status (with
// Retry-After), a connection reset or a clean close part-way through the
// body, a stall, a flipped byte, or a HEAD that claims a blob exists. Each
// rule fires a given number of times, so that a retry can succeed.
package faultproxy

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Kind is what a fault does.
type Kind int

const (
	// Status answers Code with Body (a registry error document) and, when
	// RetryAfter is set, a Retry-After header; upstream is not asked.
	Status Kind = iota
	// Reset forwards the request and cuts the connection with a TCP reset
	// after After bytes of the response body.
	Reset
	// Truncate forwards the request and closes the connection cleanly
	// after After bytes of the response body, short of its length.
	Truncate
	// Stall forwards the request and stops sending after After bytes of
	// the response body until the client gives up (or the proxy closes).
	Stall
	// Corrupt forwards the request and flips the byte at offset After of
	// the response body; length and headers are kept.
	Corrupt
	// LieHead answers a HEAD of a blob with 200 whether or not upstream
	// has it; with After > 0 its Content-Length is After, else it has
	// none.
	LieHead
)

func (k Kind) String() string {
	return [...]string{"status", "reset", "truncate", "stall", "corrupt", "lie-head"}[k]
}

// Fault is one way to misbehave.
type Fault struct {
	Kind       Kind
	Code       int
	Body       string
	RetryAfter time.Duration
	// RetryAfterHeader, when set, is sent as the Retry-After header as
	// it is (an HTTP date, say) instead of RetryAfter in seconds.
	RetryAfterHeader string
	After            int64
}

// Rule says which requests get a fault: those whose method is Method
// (any when empty) and whose path contains Path (is Path, with Exact),
// the first Times of them (every one when Times is 0); with Every, only
// every Every-th of the matching requests (the 5th, 10th, … for 5).
type Rule struct {
	Method string
	Path   string
	Exact  bool
	Every  int
	Times  int
	Fault  Fault
}

// Proxy is a faulty proxy to one upstream registry.
type Proxy struct {
	// Host is the proxy's host:port on 127.0.0.1.
	Host string

	srv    *httptest.Server
	rp     *httputil.ReverseProxy
	mu     sync.Mutex
	rules  []*rule
	log    []string
	stop   chan struct{}
	tokens bool
}

// TokenPath is the path of the proxy's token endpoint (see RequireTokens).
const TokenPath = "/token"

// token is the one bearer token the proxy hands out.
const token = "faultproxy"

// RequireTokens makes the proxy answer 401 with a Bearer challenge to any
// request without its token, and hand the token out at TokenPath, as a
// registry with a token service does; rules apply to the token endpoint
// too (a 429 there, say). Call it before the proxy is used.
func (p *Proxy) RequireTokens() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokens = true
}

type rule struct {
	Rule
	fired int
	seen  int
}

// New starts a proxy to upstream (host:port, plain HTTP). Close stops it.
func New(upstream string) *Proxy {
	u := &url.URL{Scheme: "http", Host: upstream}
	p := &Proxy{rp: httputil.NewSingleHostReverseProxy(u), stop: make(chan struct{})}
	// Flush as bytes come, so that a fault after N bytes is after N bytes
	// on the wire too.
	p.rp.FlushInterval = -1
	p.rp.ErrorLog = log.New(io.Discard, "", 0)
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.Host = strings.TrimPrefix(p.srv.URL, "http://")
	return p
}

// Close stops the proxy and releases stalled requests.
func (p *Proxy) Close() {
	close(p.stop)
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// Add adds rules; the first matching rule that has not fired its Times
// applies.
func (p *Proxy) Add(rules ...Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range rules {
		p.rules = append(p.rules, &rule{Rule: r})
	}
}

// Clear removes every rule: the proxy forwards faithfully from now on.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

// Fired returns how many times each rule fired, in the order added.
func (p *Proxy) Fired() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := make([]int, len(p.rules))
	for i, r := range p.rules {
		n[i] = r.fired
	}
	return n
}

// Log returns "METHOD path -> fault" for each request a rule hit.
func (p *Proxy) Log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

func (p *Proxy) match(r *http.Request) *Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ru := range p.rules {
		if ru.Method != "" && ru.Method != r.Method || !strings.Contains(r.URL.Path, ru.Path) || ru.Exact && r.URL.Path != ru.Path {
			continue
		}
		if ru.Times > 0 && ru.fired >= ru.Times {
			continue
		}
		if ru.seen++; ru.Every > 1 && ru.seen%ru.Every != 0 {
			continue
		}
		ru.fired++
		p.log = append(p.log, fmt.Sprintf("%s %s -> %s", r.Method, r.URL.Path, ru.Fault.Kind))
		f := ru.Fault
		return &f
	}
	return nil
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	f := p.match(r)
	p.mu.Lock()
	tokens := p.tokens
	p.mu.Unlock()
	switch {
	case f == nil && tokens && r.URL.Path == TokenPath:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"token":"`+token+`","access_token":"`+token+`","expires_in":300}`)
	case f == nil && tokens && r.Header.Get("Authorization") != "Bearer "+token:
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="http://%s%s",service="faultproxy"`, p.Host, TokenPath))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"a token is needed"}]}`)
	case f == nil:
		p.rp.ServeHTTP(w, r)
	case f.Kind == Status:
		io.Copy(io.Discard, r.Body)
		if f.RetryAfterHeader != "" {
			w.Header().Set("Retry-After", f.RetryAfterHeader)
		} else if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.Code)
		io.WriteString(w, f.Body)
	case f.Kind == LieHead:
		if f.After > 0 {
			w.Header().Set("Content-Length", strconv.FormatInt(f.After, 10))
		}
		w.WriteHeader(http.StatusOK)
	default:
		p.rp.ServeHTTP(&faultWriter{ResponseWriter: w, f: f, stop: p.stop, done: r.Context().Done()}, r)
	}
}

// faultWriter applies a body fault to what the reverse proxy writes.
type faultWriter struct {
	http.ResponseWriter
	f       *Fault
	n       int64
	stop    <-chan struct{}
	done    <-chan struct{}
	tripped bool
}

func (w *faultWriter) Flush() {
	if fl, ok := w.ResponseWriter.(http.Flusher); ok && !w.tripped {
		fl.Flush()
	}
}

func (w *faultWriter) Write(b []byte) (int, error) {
	if w.tripped {
		return 0, errTripped
	}
	start := w.n
	w.n += int64(len(b))
	if w.n <= w.f.After {
		return w.ResponseWriter.Write(b)
	}
	cut := w.f.After - start
	if cut < 0 {
		cut = 0
	}
	if w.f.Kind == Corrupt {
		c := append([]byte(nil), b...)
		c[cut] ^= 0xff
		w.f = &Fault{Kind: Corrupt, After: 1<<62 - 1} // once
		return w.ResponseWriter.Write(c)
	}
	if cut > 0 {
		w.ResponseWriter.Write(b[:cut])
	}
	w.Flush()
	w.tripped = true
	switch w.f.Kind {
	case Stall:
		select {
		case <-w.stop:
		case <-w.done:
		}
		w.hijackClose(false)
	case Reset:
		w.hijackClose(true)
	case Truncate:
		w.hijackClose(false)
	}
	return int(cut), errTripped
}

var errTripped = fmt.Errorf("faultproxy: connection cut on purpose")

// hijackClose takes the connection from the server and closes it, with a
// reset (SO_LINGER 0) when rst is set.
func (w *faultWriter) hijackClose(rst bool) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return
	}
	conn, bw, err := hj.Hijack()
	if err != nil {
		return
	}
	flush(bw)
	if tc, ok := conn.(*net.TCPConn); ok && rst {
		tc.SetLinger(0)
	}
	conn.Close()
}

func flush(bw *bufio.ReadWriter) {
	if bw != nil {
		bw.Flush()
	}
}
