package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// upstreamProbeTimeout bounds the one request that checks a model
// upstream answers: an API answers a GET in well under it.
const upstreamProbeTimeout = 10 * time.Second

// upstreamClient sends the probe.
var upstreamClient = &http.Client{Timeout: upstreamProbeTimeout}

// ProbeUpstream asks the run's model upstream one cheap question before
// any image is made: GET <base_url>/models, without the key. Any HTTP
// answer will do (401 and 404 included: the server is there); no answer
// (a wrong base_url, a host that does not resolve, an outage) is refused,
// naming the URL and where it came from. Without it every run of an
// evaluation asked the upstream in vain and was graded FAILED, an
// evaluation that read 0%. Runs without a model (model "" or "none", no
// model file) are not checked.
func ProbeUpstream(ctx context.Context, model, modelFile, modelsDir string, lookup func(string) string) error {
	if modelFile == "" && (model == "" || model == "none") {
		return nil
	}
	cfg, err := Resolve(model, modelFile, modelsDir, lookup)
	if errors.Is(err, ErrNoUpstream) || cfg == nil || cfg.Upstream.BaseURL == nil {
		// Said by the checks of the model set-up, or no upstream at all.
		return nil
	}
	if err != nil {
		return err
	}
	base := cfg.Upstream.BaseURL.String()
	u := strings.TrimSuffix(base, "/") + "/models"
	ctx, cancel := context.WithTimeout(ctx, upstreamProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("the model upstream %s: %w", base, err)
	}
	resp, err := upstreamClient.Do(req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return err
		}
		where := "base_url in " + cfg.Source
		if cfg.Source == DefaultBaseURLEnv {
			where = DefaultBaseURLEnv
		}
		return fmt.Errorf("the model upstream %s does not answer (%v): check %s, or whether the server is up; every run would fail its model requests", base, unwrapURLError(err), where)
	}
	resp.Body.Close()
	return nil
}

// unwrapURLError is the cause of a *url.Error, whose message repeats the
// method and URL the caller already names.
func unwrapURLError(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}
