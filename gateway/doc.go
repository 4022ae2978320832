// Package gateway provides the model gateway of a run: an HTTP reverse
// proxy, on the host, between an agent in a closed container and the model
// API the user configured.
//
// The container never sees the real API key. It gets a per-run token that
// the gateway checks; the gateway strips whatever credentials the request
// carried and injects the real key as the upstream's API flavour expects
// (Authorization: Bearer for the OpenAI flavours, x-api-key for Anthropic
// messages). Responses stream through as they come, server-sent events
// included.
//
// Every request is recorded (model, status, latency, token usage read from
// the JSON body or the stream's final events) as one line of model.jsonl,
// and optional limits on requests, tokens and cost answer 429 once reached.
// A model the run did not allow is refused with 403.
//
// The gateway listens on a Unix socket; the run bind-mounts its directory
// into the container, where the entrypoint forwards 127.0.0.1:4000 to it
// (see sserun.ForwardGateway).
package gateway
