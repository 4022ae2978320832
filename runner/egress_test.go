package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// TestCheckOpenNetwork: an open run (the host's network namespace) is
// refused where the image registry listens on loopback, which its agent
// would reach and push to; a registry elsewhere is not this check's.
func TestCheckOpenNetwork(t *testing.T) {
	hostile.Case(t, "egress open reaches the host's loopback")
	for registry, refused := range map[string]bool{
		"localhost:5000/ssebench":     true,
		"127.0.0.1:5000":              true,
		"127.1.2.3/x":                 true,
		"[::1]:5000/ssebench":         true,
		"reg.localhost:5000":          true,
		"0.0.0.0:5000":                true,
		"registry.example.com/team/x": false,
		"10.1.2.3:5000/ssebench":      false,
		"":                            false,
	} {
		err := CheckOpenNetwork(context.Background(), registry)
		if (err != nil) != refused {
			t.Errorf("CheckOpenNetwork(%q) = %v, want refused %t", registry, err, refused)
		}
		if err != nil && !strings.Contains(err.Error(), "--egress restricted") {
			t.Errorf("CheckOpenNetwork(%q) = %v, want it to say what to do", registry, err)
		}
	}
}
