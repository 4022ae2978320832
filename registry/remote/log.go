package remote

import (
	"log"
	"net/http"
	"regexp"
	"sync/atomic"
	"time"
)

// requestLog is where logRequests writes; nil logs nothing.
var requestLog atomic.Pointer[log.Logger]

// SetRequestLog sends one line per registry request and one per answer to
// l (ssebench -v); nil, the default, logs nothing. Every request is
// logged there, go-containerregistry's own calls included, after a
// loopback registry's URL has become plain HTTP (plainLoopback): its own
// logger, which logs.Debug enables, would print the https URL it composed
// first, and dump headers and bodies.
func SetRequestLog(l *log.Logger) { requestLog.Store(l) }

// logRequests logs one line per request and one per answer to the request
// log. Unlike go-containerregistry's logger it never dumps a body, so a
// blob is neither printed nor held in memory, and URLs lose their query:
// registries sign upload state into it.
func logRequests(rt http.RoundTripper) http.RoundTripper {
	if requestLog.Load() == nil {
		return rt
	}
	return requestLogger{rt}
}

type requestLogger struct{ base http.RoundTripper }

func (rl requestLogger) RoundTrip(req *http.Request) (*http.Response, error) {
	l := requestLog.Load()
	if l == nil {
		return rl.base.RoundTrip(req)
	}
	u := redactURL(req.URL.String())
	l.Printf("--> %s %s", req.Method, u)
	start := time.Now()
	resp, err := rl.base.RoundTrip(req)
	d := time.Since(start).Round(time.Millisecond)
	if err != nil {
		l.Printf("<-- %s %s: %s (%s)", req.Method, u, signedQuery.ReplaceAllString(err.Error(), "$1?…"), d)
		return resp, err
	}
	l.Printf("<-- %d %s %s (%s)", resp.StatusCode, req.Method, u, d)
	return resp, nil
}

// signedQuery is the query of a URL inside a message.
var signedQuery = regexp.MustCompile(`(https?://[^\s"?]+)\?[^\s"]*`)
