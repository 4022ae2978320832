package gateway

import (
	"fmt"
	"net/http"
)

// The run's token is spent when the agent phase ends: the entrypoint posts
// it to contract.GatewayRevokePath before anything looks at the tree. From
// then on the gateway refuses it with 403, so that the agent's code, run
// by the grade's scripts with the hidden tests in place, cannot ask the
// model through a token it saw in its phase, whichever way it reaches the
// gateway. An agent that revokes early only loses its own model access.

// serveRevoke answers a POST to contract.GatewayRevokePath that carries
// the run's token: the token is refused from then on. It is not a model
// request: it is not counted, and model.jsonl does not list it.
func (g *Gateway) serveRevoke(w http.ResponseWriter, r *http.Request) {
	if !g.authorized(r) {
		g.writeError(w, http.StatusUnauthorized, "invalid_api_key", "the gateway did not accept this API key: use the run's SSE_API_KEY")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		g.writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "revoking the run's token takes a POST")
		return
	}
	if !g.revoked.Swap(true) {
		fmt.Fprintf(g.opts.log, "gateway: the run's token is revoked: the agent phase is over\n")
	}
	w.WriteHeader(http.StatusNoContent)
}

// refuseRevoked refuses a request of a run whose token is revoked, and
// says so; it returns false while the token is good.
func (g *Gateway) refuseRevoked(w http.ResponseWriter, x *exchange) bool {
	if !g.revoked.Load() {
		return false
	}
	g.refuse(w, x, http.StatusForbidden, "revoked", "token_revoked",
		"this run's token was revoked when the agent phase ended: the model takes no more requests from this run")
	return true
}

// Revoked reports whether the run's token has been revoked.
func (g *Gateway) Revoked() bool { return g.revoked.Load() }
