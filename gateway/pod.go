package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
)

// A gateway that runs away from the machine that started the run (a pod
// of the Kubernetes backend, cmd/ssebench-gateway) gets its whole set-up,
// key included, as one JSON document (a Secret only it mounts), and
// reports on its output: each request's record and the run's totals so
// far, one line each, after a prefix, among whatever else it logs.
const (
	// RecordPrefix starts a line that holds one Record.
	RecordPrefix = "ssebench-gateway record "
	// TotalsPrefix starts a line that holds the Totals after the
	// request recorded just before it.
	TotalsPrefix = "ssebench-gateway totals "
)

// maxReportLine bounds a line of the gateway's output that ReadReport
// keeps; a record is a few hundred bytes.
const maxReportLine = 1 << 20

// Remote is a gateway's set-up as cmd/ssebench-gateway reads it.
type Remote struct {
	BaseURL string           `json:"base_url"`
	Key     string           `json:"key,omitempty"`
	Flavour Flavour          `json:"flavour"`
	Model   string           `json:"model,omitempty"`
	Allowed []string         `json:"allowed,omitempty"`
	Prices  map[string]Price `json:"prices,omitempty"`
	Source  string           `json:"source,omitempty"`
	Token   string           `json:"token"`
	Limits  Limits           `json:"limits"`
}

// MarshalRemote encodes cfg, the run's token and limits for a gateway
// elsewhere. The result holds the real key: it belongs in a secret.
func MarshalRemote(cfg *Config, token string, limits Limits) ([]byte, error) {
	if cfg == nil || cfg.Upstream.BaseURL == nil {
		return nil, ErrNoUpstream
	}
	if err := WithToken(token)(&options{}); err != nil {
		return nil, err
	}
	return json.Marshal(Remote{
		BaseURL: cfg.Upstream.BaseURL.String(), Key: cfg.Upstream.Key, Flavour: cfg.Upstream.Flavour,
		Model: cfg.Model, Allowed: cfg.Allowed, Prices: cfg.Prices, Source: cfg.Source,
		Token: token, Limits: limits,
	})
}

// UnmarshalRemote decodes what MarshalRemote wrote into the gateway's
// Config and the options of its token and limits.
func UnmarshalRemote(data []byte) (*Config, []Option, error) {
	var r Remote
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, nil, fmt.Errorf("reading the gateway's set-up: %w", err)
	}
	u, err := parseBaseURL(r.BaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the gateway's set-up: %w", err)
	}
	cfg := &Config{
		Upstream: Upstream{BaseURL: u, Key: r.Key, Flavour: r.Flavour},
		Model:    r.Model, Allowed: r.Allowed, Prices: r.Prices, Source: r.Source,
	}
	return cfg, []Option{WithToken(r.Token), WithLimits(r.Limits)}, nil
}

// ReportWriter is the recorder of a remote gateway: each record it is
// given goes to w after RecordPrefix, followed by the totals after
// TotalsPrefix.
type ReportWriter struct {
	mu sync.Mutex
	w  io.Writer
	g  *Gateway
}

// NewReportWriter returns the recorder to pass to WithRecorder; Attach
// gives it the gateway whose totals it reports.
func NewReportWriter(w io.Writer) *ReportWriter { return &ReportWriter{w: w} }

// Attach sets the gateway whose totals follow each record.
func (rw *ReportWriter) Attach(g *Gateway) {
	rw.mu.Lock()
	rw.g = g
	rw.mu.Unlock()
}

// Write takes one record line (the gateway writes each whole, under its
// lock, so the totals it reads next include it).
func (rw *ReportWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	var b bytes.Buffer
	b.WriteString(RecordPrefix)
	b.Write(bytes.TrimRight(p, "\n"))
	b.WriteByte('\n')
	if rw.g != nil {
		// finish holds g.mu while it writes; totals are read from it
		// without taking the lock again.
		t, err := json.Marshal(rw.g.totals)
		if err != nil {
			return 0, err
		}
		b.WriteString(TotalsPrefix)
		b.Write(t)
		b.WriteByte('\n')
	}
	if _, err := rw.w.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteTotals writes the totals line alone (the gateway's last words, so
// that a gateway that answered nothing still reports its limits).
func (rw *ReportWriter) WriteTotals(t Totals) error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(rw.w, "%s%s\n", TotalsPrefix, b)
	return err
}

// Report is what ReadReport found in a remote gateway's output.
type Report struct {
	// Records is how many records were written to the record writer.
	Records int
	// Totals is the last totals line; nil when there was none.
	Totals *Totals
	// LastSeq is the highest record number seen.
	LastSeq int
}

// ReadReport reads a remote gateway's output: record lines go to records
// (as model.jsonl lines), the last totals line is kept, other lines go to
// log (nil discards them). Records numbered at or below skipSeq are
// dropped: a reader that reconnects reads the output again from its
// start. A malformed report line is an error; the output is the
// gateway's own, which no agent writes.
func ReadReport(r io.Reader, records, log io.Writer, skipSeq int, rep *Report) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxReportLine)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, RecordPrefix):
			body := strings.TrimPrefix(line, RecordPrefix)
			var rec struct {
				Seq int `json:"seq"`
			}
			if err := json.Unmarshal([]byte(body), &rec); err != nil {
				return fmt.Errorf("the gateway's record %q: %w", cut(body, 80), err)
			}
			if rec.Seq <= skipSeq || rec.Seq <= rep.LastSeq {
				continue
			}
			if _, err := io.WriteString(records, body+"\n"); err != nil {
				return err
			}
			rep.Records++
			rep.LastSeq = rec.Seq
		case strings.HasPrefix(line, TotalsPrefix):
			var t Totals
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, TotalsPrefix)), &t); err != nil {
				return fmt.Errorf("the gateway's totals: %w", err)
			}
			rep.Totals = &t
		case log != nil:
			if _, err := io.WriteString(log, line+"\n"); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}
