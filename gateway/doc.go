// Package gateway provides the model gateway of a run: an HTTP reverse
// proxy, on the host, between an agent in a closed container and the model
// API the user configured.
//
// The agent is an adversary: it wants model calls that are not counted,
// or the real key on endpoints it should not reach. So:
//
//   - The container never sees the real API key. It gets a per-run token
//     that the gateway checks; the gateway forwards only an allow-list of
//     headers and injects the real key as the upstream's API flavour
//     expects (Authorization: Bearer for the OpenAI flavours, x-api-key
//     for Anthropic messages).
//   - Only the flavour's generating endpoint and its model list are
//     forwarded (endpoints.go); anything else is refused with 403.
//   - A generating request's body is read strictly (request.go): one JSON
//     object, no duplicate keys, the priced fields spelled exactly, no
//     tools the upstream runs itself, so the gateway checks what the
//     upstream will serve.
//   - Usage is counted whatever the agent asks: every chat stream asks for
//     it (strip.go hides it again from an agent that did not), a reply
//     without usage is counted by an estimate and marked so (usage.go),
//     and the price is the answering model's.
//   - A request's maximum is set aside against the limits while it runs,
//     and against an evaluation's budget, a Ledger that all the runs'
//     gateways on this machine share (ledger.go).
//
// Responses stream through as they come, server-sent events included.
// Every request is recorded (model, status, latency, token usage) as one
// line of model.jsonl, and optional limits on requests, tokens and cost
// answer 429 once reached.
//
// The gateway listens on a Unix socket; the run bind-mounts its directory
// into the container, where the entrypoint forwards 127.0.0.1:4000 to it
// (see sserun.ForwardGateway). On Kubernetes it runs as a pod of its own
// and reports through its log, each line signed (pod.go).
package gateway
