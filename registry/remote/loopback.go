package remote

import (
	"errors"
	"net/http"
	"regexp"
	"strings"
	"syscall"
)

// plainLoopback sends a request for a loopback registry over plain HTTP.
// The rule (README, "The CLI at a glance") is that localhost and 127.0.0.1
// always use plain HTTP; but go-containerregistry's ping tries HTTPS first
// for every registry, so without this each connection to a local registry
// began with a TLS handshake to a plain-HTTP server, which failed (and -v
// printed the failure) before the HTTP fallback succeeded. The answer
// carries the HTTP request, so the ping records the registry as plain HTTP
// and every later request is made over HTTP from the start.
type plainLoopback struct{ base http.RoundTripper }

var _ http.RoundTripper = plainLoopback{}

// RoundTrip implements http.RoundTripper.
func (t plainLoopback) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" || !isLoopback(req.URL.Host) {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.URL.Scheme = "http"
	return t.base.RoundTrip(r)
}

// refusedLoopback says whether err is a loopback registry refusing the
// connection. Nothing listens there: a registry restarting on this
// machine is back in well under the 7.5 s the retries would wait, and the
// usual cause is a registry that is not running or a wrong port, which
// waiting does not fix. Say so at once.
func refusedLoopback(req *http.Request, err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) && isLoopback(req.URL.Host)
}

// httpsLoopback matches a URL of a loopback registry quoted as HTTPS.
var httpsLoopback = regexp.MustCompile(`"https://((?:localhost|127(?:\.\d{1,3}){3}|\[::1\])(?::\d+)?)/`)

// LoopbackMessage makes an error message say what was sent to a loopback
// registry: plain HTTP. net/http quotes the URL a request was made with,
// and go-containerregistry pings every registry at https:// first, which
// plainLoopback sends as http://; so a refused connection read
// `Get "https://127.0.0.1:5000/v2/": ...; Get "http://127.0.0.1:5000/v2/": ...`,
// naming HTTPS that never went out, and the same failure twice. A part of
// msg (parts are separated by "; ") that the one before ends with is
// dropped.
func LoopbackMessage(msg string) string {
	if !strings.Contains(msg, `"https://`) {
		return msg
	}
	msg = httpsLoopback.ReplaceAllString(msg, `"http://$1/`)
	parts := strings.Split(msg, "; ")
	out := parts[:1]
	for _, p := range parts[1:] {
		if !strings.HasSuffix(out[len(out)-1], p) {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}
