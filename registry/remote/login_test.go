package remote_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// TestLoginHintOnlyForRegistries: a registry's refusal gets a hint naming
// `ssebench login` and the host; another service's 401 gets none.
func TestLoginHintOnlyForRegistries(t *testing.T) {
	// A model API's refusal is not a registry's: no login hint. The
	// gateway's errors reach the user as text like this.
	for _, msg := range []string{
		"model request failed: 401 Unauthorized",
		"the upstream model answered 403 Forbidden",
	} {
		if hint := remote.LoginHint(errors.New(msg)); hint != "" {
			t.Errorf("LoginHint(%q) = %q, want none", msg, hint)
		}
	}
	for msg, host := range map[string]string{
		`pushing x: HEAD http://127.0.0.1:5000/v2/a/blobs/sha256:ab: unexpected status code 401 Unauthorized`: "127.0.0.1:5000",
		`failed to push registry.lan:5000/a:1: denied: requested access to the resource is denied`:            "HOST",
	} {
		if hint := remote.LoginHint(errors.New(msg)); !strings.Contains(hint, "ssebench login "+host+" ") {
			t.Errorf("LoginHint(%q) = %q, want a login hint for %s", msg, hint, host)
		}
	}
}
