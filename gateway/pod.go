package gateway

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// A gateway that runs away from the machine that started the run (a pod
// of the Kubernetes backend, cmd/ssebench-gateway) gets its whole set-up,
// key included, as one JSON document (a Secret only it mounts), and
// reports on its output: each request's record and the run's totals so
// far, one line each, after a prefix, among whatever else it logs.
//
// The output is shared with the gateway's log, which quotes what agents
// send, so a line is believed only when signed: each report line is
//
//	PREFIX HMAC-SHA256(report key, PREFIX + JSON) in hex, a space, JSON
//
// with a report key that MarshalRemote draws for the run and puts in the
// set-up, so only the host and the gateway's pod know it. A line that is
// not signed, too long or not text is the log's, never an error: no
// request the agent sends can cut the report short or add to it.
const (
	// RecordPrefix starts a line that holds one Record.
	RecordPrefix = "ssebench-gateway record "
	// TotalsPrefix starts a line that holds the Totals after the
	// request recorded just before it.
	TotalsPrefix = "ssebench-gateway totals "
)

// maxReportLine bounds a line of the gateway's output that ReadReport
// reads; a record is a few hundred bytes, its agent-given fields cut
// short. A longer line is skipped whole.
const maxReportLine = 1 << 20

// reportKeySize is the size of a report key, in bytes.
const reportKeySize = 32

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
	// MaxOutput is Config.MaxOutput.
	MaxOutput int64 `json:"max_output,omitempty"`
	// ReportKey signs the gateway's report lines (hex).
	ReportKey string `json:"report_key"`
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
	key := make([]byte, reportKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("drawing the gateway's report key: %w", err)
	}
	return json.Marshal(Remote{
		BaseURL: cfg.Upstream.BaseURL.String(), Key: cfg.Upstream.Key, Flavour: cfg.Upstream.Flavour,
		Model: cfg.Model, Allowed: cfg.Allowed, Prices: cfg.Prices, Source: cfg.Source,
		Token: token, Limits: limits, ReportKey: hex.EncodeToString(key), MaxOutput: cfg.MaxOutput,
	})
}

// UnmarshalRemote decodes what MarshalRemote wrote into the gateway's
// Config and the options of its token, limits and report key.
func UnmarshalRemote(data []byte) (*Config, []Option, error) {
	r, key, err := decodeRemote(data)
	if err != nil {
		return nil, nil, err
	}
	u, err := parseBaseURL(r.BaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the gateway's set-up: %w", err)
	}
	cfg := &Config{
		Upstream: Upstream{BaseURL: u, Key: r.Key, Flavour: r.Flavour},
		Model:    r.Model, Allowed: r.Allowed, Prices: r.Prices, Source: r.Source,
		MaxOutput: r.MaxOutput,
	}
	return cfg, []Option{WithToken(r.Token), WithLimits(r.Limits), withReportKey(key)}, nil
}

func decodeRemote(data []byte) (*Remote, []byte, error) {
	var r Remote
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, nil, fmt.Errorf("reading the gateway's set-up: %w", err)
	}
	key, err := hex.DecodeString(r.ReportKey)
	if err != nil || len(key) != reportKeySize {
		return nil, nil, errors.New("reading the gateway's set-up: it has no report key of 32 bytes in hex: write it with gateway.MarshalRemote")
	}
	return &r, key, nil
}

// ReportKey returns the report key of a set-up MarshalRemote wrote: the
// key ReadReport checks the gateway's lines with.
func ReportKey(config []byte) ([]byte, error) {
	_, key, err := decodeRemote(config)
	return key, err
}

// withReportKey sets the key a ReportWriter signs with.
func withReportKey(key []byte) Option {
	return func(o *options) error {
		o.reportKey = key
		return nil
	}
}

// reportMark starts both report prefixes.
const reportMark = "ssebench-gateway "

// record takes one signed record.
func (rep *Report) record(body []byte, records io.Writer, skipSeq int) error {
	var rec struct {
		Seq int `json:"seq"`
	}
	if json.Unmarshal(body, &rec) != nil {
		rep.Unsigned++
		return nil
	}
	if rec.Seq <= skipSeq || rec.Seq <= rep.LastSeq {
		return nil
	}
	if _, err := records.Write(append(body, '\n')); err != nil {
		return fmt.Errorf("writing the gateway's records: %w", err)
	}
	rep.Records++
	rep.LastSeq = rec.Seq
	return nil
}

// signLine returns one signed report line.
func signLine(key []byte, prefix string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(prefix))
	m.Write(body)
	var b bytes.Buffer
	b.WriteString(prefix)
	b.WriteString(hex.EncodeToString(m.Sum(nil)))
	b.WriteByte(' ')
	b.Write(body)
	b.WriteByte('\n')
	return b.Bytes()
}

// verifyLine returns the JSON of a signed report line, or false.
func verifyLine(key []byte, prefix string, rest []byte) ([]byte, bool) {
	sig, body, ok := bytes.Cut(rest, []byte(" "))
	if !ok {
		return nil, false
	}
	want, err := hex.DecodeString(string(sig))
	if err != nil {
		return nil, false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(prefix))
	m.Write(body)
	return body, hmac.Equal(m.Sum(nil), want)
}

// ReportWriter is the recorder of a remote gateway: each record it is
// given goes to w after RecordPrefix, followed by the totals after
// TotalsPrefix, each line signed with the report key of the gateway's
// set-up.
type ReportWriter struct {
	mu  sync.Mutex
	w   io.Writer
	g   *Gateway
	key []byte
}

// NewReportWriter returns the recorder to pass to WithRecorder; Attach
// gives it the gateway whose totals it reports, and whose report key it
// signs with.
func NewReportWriter(w io.Writer) *ReportWriter { return &ReportWriter{w: w} }

// Attach sets the gateway whose totals follow each record.
func (rw *ReportWriter) Attach(g *Gateway) {
	rw.mu.Lock()
	rw.g, rw.key = g, g.opts.reportKey
	rw.mu.Unlock()
}

// errNoReportKey: a report nobody can believe is not written.
var errNoReportKey = errors.New("the gateway's report has no key to sign with: attach a gateway set up by UnmarshalRemote")

// Write takes one record line (the gateway writes each whole, under its
// lock, so the totals it reads next include it).
func (rw *ReportWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if len(rw.key) == 0 {
		return 0, errNoReportKey
	}
	var b bytes.Buffer
	b.Write(signLine(rw.key, RecordPrefix, bytes.TrimRight(p, "\n")))
	// finish holds g.mu while it writes; totals are read from it
	// without taking the lock again.
	t, err := json.Marshal(rw.g.totals)
	if err != nil {
		return 0, err
	}
	b.Write(signLine(rw.key, TotalsPrefix, t))
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
	if len(rw.key) == 0 {
		return errNoReportKey
	}
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	_, err = rw.w.Write(signLine(rw.key, TotalsPrefix, b))
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
	// Unsigned is how many lines looked like report lines but were not
	// signed with the run's key (or were too long to read): the log's,
	// not the report's.
	Unsigned int
}

// ReadReport reads a remote gateway's output: signed record lines go to
// records (as model.jsonl lines), the last signed totals line is kept,
// other lines go to log (nil discards them; a line longer than
// maxReportLine is skipped). key is the set-up's report key (ReportKey).
// Records numbered at or below skipSeq are dropped: a reader that
// reconnects reads the output again from its start. Only an error
// reading r or writing records ends it early.
func ReadReport(r io.Reader, key []byte, records, log io.Writer, skipSeq int, rep *Report) error {
	if len(key) == 0 {
		return errors.New("reading the gateway's report: no report key")
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if tooLong || len(line)+len(chunk) > maxReportLine {
				tooLong, line = true, line[:0]
			} else {
				line = append(line, chunk...)
			}
			continue
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("reading the gateway's report: %w", err)
		}
		if tooLong || len(line)+len(chunk) > maxReportLine {
			rep.Unsigned++
		} else if line = append(line, chunk...); len(line) > 0 {
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			if err := rep.line(line, key, records, log, skipSeq); err != nil {
				return err
			}
		}
		line, tooLong = line[:0], false
		if err == io.EOF {
			return nil
		}
	}
}

// line reads one line of the gateway's output. A report line is looked
// for after the line's start too: a partial line that something else
// wrote without its newline must not hide the record after it (what
// comes before a signed line cannot change what it says).
func (rep *Report) line(line, key []byte, records, log io.Writer, skipSeq int) error {
	report := false
	for i := 0; i < len(line); {
		j := bytes.Index(line[i:], []byte(reportMark))
		if j < 0 {
			break
		}
		i += j
		rest := line[i:]
		i += len(reportMark)
		if body, ok := bytes.CutPrefix(rest, []byte(RecordPrefix)); ok {
			report = true
			if body, ok = verifyLine(key, RecordPrefix, body); ok {
				return rep.record(body, records, skipSeq)
			}
		} else if body, ok := bytes.CutPrefix(rest, []byte(TotalsPrefix)); ok {
			report = true
			var t Totals
			if body, ok = verifyLine(key, TotalsPrefix, body); ok && json.Unmarshal(body, &t) == nil {
				rep.Totals = &t
				return nil
			}
		}
	}
	if report {
		rep.Unsigned++
	}
	if log != nil {
		if _, err := log.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	return nil
}
