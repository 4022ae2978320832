package remote

import "net/http"

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
