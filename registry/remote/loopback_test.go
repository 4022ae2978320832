package remote

import (
	"net"
	"strings"
	"testing"
	"time"
)

// closedPort is a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestRefusedLoopback: a loopback registry that refuses the connection
// fails at once (it was retried for 7.5 s), and the message names the
// plain HTTP that was sent, once (it quoted https:// and said it twice).
func TestRefusedLoopback(t *testing.T) {
	addr := closedPort(t)
	start := time.Now()
	_, _, err := Fetch(t.Context(), addr+"/x/y:v1")
	took := time.Since(start)
	if err == nil {
		t.Fatal("Fetch from a closed port succeeded")
	}
	if took > 2*time.Second {
		t.Errorf("Fetch from a refusing loopback registry took %s, want it refused at once: %v", took, err)
	}
	msg := LoopbackMessage(err.Error())
	if strings.Contains(msg, "https://") || strings.Count(msg, "connection refused") != 1 || !strings.Contains(msg, `"http://`+addr+`/v2/"`) {
		t.Errorf("LoopbackMessage(%q) = %q, want the http:// URL and one refusal", err, msg)
	}
}

func TestLoopbackMessage(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`fetching 127.0.0.1:5999/x:v1: Get "https://127.0.0.1:5999/v2/": dial tcp 127.0.0.1:5999: connect: connection refused; Get "http://127.0.0.1:5999/v2/": dial tcp 127.0.0.1:5999: connect: connection refused`,
			`fetching 127.0.0.1:5999/x:v1: Get "http://127.0.0.1:5999/v2/": dial tcp 127.0.0.1:5999: connect: connection refused`},
		{`Get "https://localhost:5000/v2/x/manifests/v1": EOF`, `Get "http://localhost:5000/v2/x/manifests/v1": EOF`},
		// Another host is reached over HTTPS: its URL stays.
		{`Get "https://registry.example:5000/v2/": x509: unknown authority`, `Get "https://registry.example:5000/v2/": x509: unknown authority`},
		{`Get "https://127.0.0.10.example/v2/": EOF`, `Get "https://127.0.0.10.example/v2/": EOF`},
	} {
		if got := LoopbackMessage(c.in); got != c.want {
			t.Errorf("LoopbackMessage(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}
