package remote

import (
	"net/http"
	"regexp"
	"time"

	"github.com/google/go-containerregistry/pkg/logs"
)

// logRequests logs one line per request and one per answer to logs.Debug
// (ssebench -v) for the transports this package drives itself (pushes,
// blob fetches); go-containerregistry's own calls are logged by its remote
// package. Unlike go-containerregistry's logger it never dumps a body, so a
// blob is neither printed nor held in memory, and URLs lose their query:
// registries sign upload state into it.
func logRequests(rt http.RoundTripper) http.RoundTripper {
	if !logs.Enabled(logs.Debug) {
		return rt
	}
	return requestLogger{rt}
}

type requestLogger struct{ base http.RoundTripper }

func (l requestLogger) RoundTrip(req *http.Request) (*http.Response, error) {
	u := redactURL(req.URL.String())
	logs.Debug.Printf("--> %s %s", req.Method, u)
	start := time.Now()
	resp, err := l.base.RoundTrip(req)
	d := time.Since(start).Round(time.Millisecond)
	if err != nil {
		logs.Debug.Printf("<-- %s %s: %s (%s)", req.Method, u, signedQuery.ReplaceAllString(err.Error(), "$1?…"), d)
		return resp, err
	}
	logs.Debug.Printf("<-- %d %s %s (%s)", resp.StatusCode, req.Method, u, d)
	return resp, nil
}

// signedQuery is the query of a URL inside a message.
var signedQuery = regexp.MustCompile(`(https?://[^\s"?]+)\?[^\s"]*`)
