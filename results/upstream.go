package results

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"

	"github.com/42-b3yond-6ug/ssebench/gateway"
)

// ModelUnreachable says the run's model upstream answered none of its
// requests: the run forwarded at least one, and every one failed without
// an answer (the gateway could not connect, or no reply came: 502 or 504
// from the gateway itself, no tokens). Such a run says nothing about the
// agent: its FAILED would make an evaluation read 0% after an outage or a
// wrong base_url. n is the requests, why the first one's error.
func (r *Run) ModelUnreachable() (unreachable bool, n int, why string) {
	f, err := os.Open(filepath.Join(r.Dir, ModelLog))
	if err != nil {
		return false, 0, ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var rec gateway.Record
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Refused != "" {
			continue
		}
		noAnswer := rec.Failed && (rec.Status == http.StatusBadGateway || rec.Status == http.StatusGatewayTimeout) && rec.TotalTokens == 0
		if !noAnswer {
			return false, 0, ""
		}
		if n == 0 {
			why = rec.Error
		}
		n++
	}
	return n > 0, n, why
}
