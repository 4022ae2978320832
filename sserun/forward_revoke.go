package sserun

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// revokeTimeout bounds the revoke at the phase end: one small request to
// a gateway that answers at once.
const revokeTimeout = 10 * time.Second

// revoke spends the run's token at the gateway (contract.GatewayRevokePath),
// straight to the gateway's socket or address, not through the agent's
// port: from then on the gateway refuses the token, so the agent's code
// the grade runs cannot use a token it saw. A failure is said through
// note: the forwarder still closes.
func (f *Forwarder) revoke() {
	if f.token == "" {
		return
	}
	client := &http.Client{
		Timeout: revokeTimeout,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, f.network, f.socket)
			},
			DisableKeepAlives: true,
		},
	}
	req, err := http.NewRequest(http.MethodPost, "http://gateway"+contract.GatewayRevokePath, nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+f.token)
	resp, err := client.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			err = fmt.Errorf("the gateway answered %s", resp.Status)
		}
	}
	if err != nil && f.note != nil {
		f.note("revoking the run's token at the model gateway: %v: the token may still work until the run ends", err)
	}
}
