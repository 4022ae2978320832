package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// An agent reaches the upstream with the real key only through the
// endpoints its flavour generates with, and their model lists: anything
// else (batches, files, fine-tuning, embeddings, another flavour's
// endpoint, a method the endpoint does not take) would spend or expose
// the key in ways the gateway cannot count, so it is refused with 403.

// endpoint is one allowed method and path, relative to the base URL.
type endpoint struct {
	method string
	path   string
	// generate marks the endpoint that runs the model: its body is read
	// strictly and its usage counted.
	generate bool
	// item allows one more path segment: GET /models/{id}.
	item bool
	// query lists the query parameters the endpoint may carry.
	query []string
}

// endpoints lists each flavour's endpoints. A path may also carry a /v1
// prefix, for a base URL without one.
var endpoints = map[Flavour][]endpoint{
	OpenAIChat: {
		{method: http.MethodPost, path: "/chat/completions", generate: true},
		{method: http.MethodGet, path: "/models", query: []string{"limit", "after"}},
		{method: http.MethodGet, path: "/models", item: true},
	},
	OpenAIResponses: {
		{method: http.MethodPost, path: "/responses", generate: true},
		{method: http.MethodGet, path: "/models", query: []string{"limit", "after"}},
		{method: http.MethodGet, path: "/models", item: true},
	},
	AnthropicMessages: {
		// Claude Code asks for ?beta=true when it uses beta features.
		{method: http.MethodPost, path: "/messages", generate: true, query: []string{"beta"}},
		{method: http.MethodGet, path: "/models", query: []string{"limit", "after_id", "before_id"}},
		{method: http.MethodGet, path: "/models", item: true},
	},
}

// route finds the endpoint of a request. It returns the endpoint and the
// clean path to forward, or a one-line reason to refuse.
func route(f Flavour, r *http.Request) (endpoint, string, string) {
	p := r.URL.Path
	// An escaped path ("%2F", "%2e") reads differently upstream.
	if r.URL.RawPath != "" && r.URL.RawPath != p {
		return endpoint{}, "", fmt.Sprintf("the path %q is escaped: send it plain", cut(r.URL.RawPath, 200))
	}
	rel := p
	if strings.HasPrefix(rel, "/v1/") {
		rel = rel[len("/v1"):]
	}
	var methodOK []string
	for _, e := range endpoints[f] {
		match := rel == e.path
		if e.item {
			id, ok := strings.CutPrefix(rel, e.path+"/")
			match = ok && validID(id)
		}
		if !match {
			continue
		}
		if r.Method != e.method {
			methodOK = append(methodOK, e.method)
			continue
		}
		for k := range r.URL.Query() {
			if !contains(e.query, k) {
				return endpoint{}, "", fmt.Sprintf("the query parameter %q is not allowed on %s %s", cut(k, 100), e.method, e.path)
			}
		}
		return e, p, ""
	}
	if len(methodOK) > 0 {
		return endpoint{}, "", fmt.Sprintf("%s %s is not allowed: this endpoint takes %s", cut(r.Method, 20), cut(p, 200), strings.Join(methodOK, ", "))
	}
	return endpoint{}, "", fmt.Sprintf("%s %s is not an endpoint this run may use: the %s gateway forwards only %s", cut(r.Method, 20), cut(fmt.Sprintf("%q", p), 200), f, describeEndpoints(f))
}

// upstreamPath is the path forwarded for the agent's clean path p: p
// without its /v1 when the upstream's base URL already ends in /v1. An
// SDK that was given the gateway as its base URL adds /v1 itself
// (Anthropic's, so Claude Code: /v1/messages), and a provider's base URL
// is usually written with it (https://api.example.com/v1): joined as
// they are, the upstream would get /v1/v1/messages and answer 404.
func upstreamPath(base *url.URL, p string) string {
	if strings.HasSuffix(strings.TrimSuffix(base.Path, "/"), "/v1") && strings.HasPrefix(p, "/v1/") {
		return p[len("/v1"):]
	}
	return p
}

// describeEndpoints lists a flavour's endpoints for a refusal message.
func describeEndpoints(f Flavour) string {
	var s []string
	for _, e := range endpoints[f] {
		p := e.path
		if e.item {
			p += "/{id}"
		}
		s = append(s, e.method+" "+p)
	}
	return strings.Join(s, ", ")
}

// validID accepts a model id as the model lists spell them: no slash,
// no dot segment, nothing to escape.
func validID(id string) bool {
	if id == "" || id == "." || id == ".." || len(id) > 200 {
		return false
	}
	return url.PathEscape(id) == id && !strings.Contains(id, "/")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// forwardHeaders are the request headers that reach the upstream; the
// others (credentials, an organization or project to bill, a method
// override, an upgrade to another protocol) stay behind.
var forwardHeaders = []string{
	"Content-Type", "Accept", "User-Agent",
	"Anthropic-Version", "Anthropic-Beta",
}

// forwardHeader reports whether a request header reaches the upstream:
// the allowed ones and the SDKs' telemetry (x-stainless-*).
func forwardHeader(k string) bool {
	k = http.CanonicalHeaderKey(k)
	return contains(forwardHeaders, k) || strings.HasPrefix(k, "X-Stainless-")
}
