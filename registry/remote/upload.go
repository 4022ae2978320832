package remote

// The distribution protocol for blobs (OCI distribution-spec, "Pushing
// blobs"): HEAD to check, POST ?mount= to copy from another repository,
// POST/PATCH/PUT upload sessions, and the Range of an upload's status to
// resume one. Each request goes through client.go's do and is retried by
// retry.go's rules; which blob goes where is push.go's job.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// exists says whether dst holds b. A 200 is believed only when what it
// describes is b: a Content-Length or Docker-Content-Digest of another
// blob means no (the blob is uploaded), as a registry that answers HEAD
// with a cached or wrong answer must not make a push skip a blob.
func (p *pusher) exists(ctx context.Context, c *http.Client, dst name.Repository, b blob) (bool, error) {
	var found bool
	err := p.retry(ctx, func() error {
		resp, err := p.do(ctx, c, http.MethodHead, blobsURL(dst, b.digest.String()), nil, 0, nil, http.StatusOK, http.StatusNotFound)
		if err != nil {
			return err
		}
		resp.Body.Close()
		found = resp.StatusCode == http.StatusOK
		if found && b.size > 0 && resp.ContentLength >= 0 && resp.ContentLength != b.size {
			found = false
		}
		if dcd := resp.Header.Get("Docker-Content-Digest"); found && dcd != "" && dcd != b.digest.String() {
			found = false
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("checking for blob %s in %s: %w", b.digest, dst.Name(), err)
	}
	return found, nil
}

// mount asks the registry to copy d from the repository from into dst. It
// reports whether it did; when it did not, the registry may have started
// an upload instead, whose location it returns.
func (p *pusher) mount(ctx context.Context, c *http.Client, dst, from name.Repository, d v1.Hash) (bool, string, error) {
	q := url.Values{"mount": {d.String()}, "from": {from.RepositoryStr()}}
	var mounted bool
	var loc string
	err := p.retry(ctx, func() error {
		resp, err := p.do(ctx, c, http.MethodPost, blobsURL(dst, "uploads/")+"?"+q.Encode(), nil, 0, nil, http.StatusCreated, http.StatusAccepted)
		if err != nil {
			return err
		}
		resp.Body.Close()
		mounted = resp.StatusCode == http.StatusCreated
		if !mounted {
			loc, err = location(resp)
		}
		return err
	})
	return mounted, loc, err
}

func location(resp *http.Response) (string, error) {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return "", fmt.Errorf("the registry answered %s without a Location", resp.Status)
	}
	u, err := resp.Request.URL.Parse(loc)
	if err != nil {
		return "", fmt.Errorf("the registry answered an invalid Location %q: %w", loc, err)
	}
	return u.String(), nil
}

func (p *pusher) startUpload(ctx context.Context, c *http.Client, dst name.Repository) (string, error) {
	var loc string
	err := p.retry(ctx, func() error {
		resp, err := p.do(ctx, c, http.MethodPost, blobsURL(dst, "uploads/"), nil, 0, nil, http.StatusAccepted)
		if err != nil {
			return err
		}
		resp.Body.Close()
		loc, err = location(resp)
		return err
	})
	return loc, err
}

// upload sends b to dst: in one PUT when it fits a chunk, else in PATCH
// chunks, resuming an upload an earlier push left unfinished. loc is an
// upload the registry has already started, or "". It returns how many bytes
// a resumed upload did not send again.
func (p *pusher) upload(ctx context.Context, c *http.Client, dst name.Repository, b blob, loc string) (int64, error) {
	if r := p.o.move.reporter; r != nil {
		r.Start(BlobEvent{Repository: dst.Name(), Digest: b.digest, Size: b.size, Action: BlobPushed})
	}
	if b.size <= p.o.move.chunkSize {
		return 0, p.retry(ctx, func() error {
			l := loc
			loc = "" // an upload that failed is not used again
			if l == "" {
				var err error
				if l, err = p.startUpload(ctx, c, dst); err != nil {
					return err
				}
			}
			rc, err := b.open()
			if err != nil {
				return permanent(err)
			}
			defer rc.Close()
			body := &countingReader{r: rc, add: func(n int64) { p.advance(b.digest, n) }}
			resp, err := p.do(ctx, c, http.MethodPut, withDigest(l, b.digest), body, b.size, http.Header{"Content-Type": {"application/octet-stream"}}, http.StatusCreated)
			if err != nil {
				p.advance(b.digest, -body.n)
				return err
			}
			resp.Body.Close()
			return nil
		})
	}
	rec := p.record(dst.Registry)
	save := func(string) {}
	if rec != nil {
		// The location changes with every chunk (the distribution
		// registry signs the offset into it): keep the latest.
		save = func(l string) { rec.SetUpload(dst, b.digest, l) }
	}
	var offset int64
	if rec != nil {
		if old := rec.Upload(dst, b.digest); old != "" {
			if n, ok := p.uploadStatus(ctx, c, old); ok {
				loc, offset = old, n
			}
		}
	}
	if loc == "" {
		var err error
		if loc, err = p.startUpload(ctx, c, dst); err != nil {
			return 0, err
		}
	}
	save(loc)
	resumed, err := p.uploadChunks(ctx, c, b, loc, offset, save)
	if err != nil && ctx.Err() == nil {
		// The old upload was gone or out of step (a chunk cut short
		// may leave the registry at an offset it will not resume
		// from): start over once.
		if loc, err = p.startUpload(ctx, c, dst); err != nil {
			return 0, err
		}
		save(loc)
		resumed, err = p.uploadChunks(ctx, c, b, loc, 0, save)
	}
	if err != nil {
		if rec != nil {
			rec.Release(dst, b.digest)
		}
		return 0, err
	}
	if rec != nil {
		rec.SetUpload(dst, b.digest, "")
	}
	return resumed, nil
}

// uploadChunks sends b from offset on to the upload at loc and commits it.
func (p *pusher) uploadChunks(ctx context.Context, c *http.Client, b blob, loc string, offset int64, save func(string)) (int64, error) {
	rc, err := b.open()
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	if offset > 0 {
		if _, err := io.CopyN(io.Discard, rc, offset); err != nil {
			return 0, fmt.Errorf("skipping the %d bytes uploaded before: %w", offset, err)
		}
		p.advance(b.digest, offset)
	}
	start := offset
	if ra, ok := rc.(io.ReaderAt); ok && b.size >= 0 {
		// A blob in a file is sent chunk by chunk straight from its reader,
		// which verifies it as it goes; a chunk sent again after a broken
		// connection is read again from the file. No chunk is held in
		// memory: with 4 jobs at 8 MiB that was 32 MB of a push's peak.
		for start < b.size {
			ch := &fileChunk{r: rc, ra: ra, start: start, n: min(p.o.move.chunkSize, b.size-start)}
			if loc, err = p.patch(ctx, c, b.digest, loc, ch, start); err != nil {
				return 0, err
			}
			if err := ch.finish(); err != nil {
				return 0, err
			}
			save(loc)
			start += ch.n
		}
		// Read to the end, where the reader checks the blob's digest:
		// a damaged blob fails before the upload is committed.
		if _, err := io.Copy(io.Discard, rc); err != nil {
			return 0, err
		}
	} else {
		buf := make([]byte, p.o.move.chunkSize)
		for {
			n, rerr := io.ReadFull(rc, buf)
			if rerr != nil && rerr != io.ErrUnexpectedEOF && rerr != io.EOF {
				return 0, rerr
			}
			if n > 0 {
				if loc, err = p.patch(ctx, c, b.digest, loc, bytesChunk(buf[:n]), start); err != nil {
					return 0, err
				}
				save(loc)
				start += int64(n)
			}
			if rerr != nil {
				break
			}
		}
	}
	if start != b.size && b.size >= 0 {
		return 0, fmt.Errorf("the blob has %d bytes, expected %d", start, b.size)
	}
	err = p.retry(ctx, func() error {
		resp, err := p.do(ctx, c, http.MethodPut, withDigest(loc, b.digest), http.NoBody, 0, nil, http.StatusCreated)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	return offset, err
}

// chunk is one PATCH of a chunked upload: its length, and its bytes from
// an offset on, read again for each attempt.
type chunk interface {
	size() int64
	from(off int64) io.Reader
}

// bytesChunk is a chunk held in memory.
type bytesChunk []byte

func (b bytesChunk) size() int64              { return int64(len(b)) }
func (b bytesChunk) from(off int64) io.Reader { return bytes.NewReader(b[off:]) }

// fileChunk is bytes [start, start+n) of a blob read in order from r, with
// ra over the same bytes. The first attempt streams from r; a later one
// first reads what is left of the chunk from r, so that r stays in step
// (it verifies the whole blob), then sends from ra.
type fileChunk struct {
	r        io.Reader
	ra       io.ReaderAt
	start, n int64
	read     int64 // bytes of the chunk read from r
	streamed bool
}

func (c *fileChunk) size() int64 { return c.n }

func (c *fileChunk) from(off int64) io.Reader {
	if !c.streamed && off == 0 {
		c.streamed = true
		return &countingReader{r: io.LimitReader(c.r, c.n), add: func(n int64) { c.read += n }}
	}
	if err := c.finish(); err != nil {
		return errorReader{err}
	}
	return io.NewSectionReader(c.ra, c.start+off, c.n-off)
}

// finish reads from r what the attempts left of the chunk.
func (c *fileChunk) finish() error {
	if c.read < c.n {
		n, err := io.CopyN(io.Discard, c.r, c.n-c.read)
		c.read += n
		c.streamed = true
		return err
	}
	return nil
}

type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) { return 0, e.err }

// patch sends ch, which starts at byte start of the blob, and returns the
// upload's next location. A chunk whose connection broke is sent again
// from where the registry says it stopped.
func (p *pusher) patch(ctx context.Context, c *http.Client, d v1.Hash, loc string, ch chunk, start int64) (string, error) {
	sent := int64(0) // bytes of the chunk the registry has
	size := ch.size()
	err := p.retry(ctx, func() error {
		from := start + sent
		hdr := http.Header{
			"Content-Type":  {"application/octet-stream"},
			"Content-Range": {fmt.Sprintf("%d-%d", from, start+size-1)},
		}
		body := &countingReader{r: ch.from(sent), add: func(n int64) { p.advance(d, n) }}
		resp, err := p.do(ctx, c, http.MethodPatch, loc, body, size-sent, hdr, http.StatusAccepted, http.StatusNoContent)
		if err != nil {
			p.advance(d, -body.n)
			// Ask how far the registry got before trying again.
			if n, ok := p.uploadStatus(ctx, c, loc); ok && n >= start && n <= start+size {
				p.advance(d, n-from)
				sent = n - start
			}
			return err
		}
		resp.Body.Close()
		if l, lerr := location(resp); lerr == nil {
			loc = l
		}
		sent = size
		return nil
	})
	return loc, err
}

// uploadStatus asks how many bytes the upload at loc holds.
func (p *pusher) uploadStatus(ctx context.Context, c *http.Client, loc string) (int64, bool) {
	resp, err := p.do(ctx, c, http.MethodGet, loc, nil, 0, nil, http.StatusNoContent)
	if err != nil {
		return 0, false
	}
	resp.Body.Close()
	return parseRange(resp.Header.Get("Range"))
}

// parseRange reads the Range of an upload status, "0-<last byte>". The
// distribution registry answers "0-0" for an empty upload too; we take it
// as empty, and a wrong guess only costs a restart of that upload.
func parseRange(s string) (int64, bool) {
	lo, hi, ok := strings.Cut(strings.TrimPrefix(s, "bytes="), "-")
	if !ok || lo != "0" {
		return 0, false
	}
	n, err := strconv.ParseInt(hi, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	if n == 0 {
		return 0, true
	}
	return n + 1, true
}

func withDigest(loc string, d v1.Hash) string {
	u, err := url.Parse(loc)
	if err != nil {
		return loc
	}
	q := u.Query()
	q.Set("digest", d.String())
	u.RawQuery = q.Encode()
	return u.String()
}

// uploadStream sends l, whose digest is known only once it is read, in
// chunks to a new upload in dst and commits it; it returns l's digest and
// size.
func (p *pusher) uploadStream(ctx context.Context, c *http.Client, dst name.Repository, l v1.Layer) (v1.Hash, int64, error) {
	loc, err := p.startUpload(ctx, c, dst)
	if err != nil {
		return v1.Hash{}, 0, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return v1.Hash{}, 0, err
	}
	defer rc.Close()
	buf := make([]byte, p.o.move.chunkSize)
	var start int64
	for {
		n, rerr := io.ReadFull(rc, buf)
		if rerr != nil && rerr != io.ErrUnexpectedEOF && rerr != io.EOF {
			return v1.Hash{}, 0, rerr
		}
		if n > 0 {
			if loc, err = p.patch(ctx, c, v1.Hash{}, loc, bytesChunk(buf[:n]), start); err != nil {
				return v1.Hash{}, 0, err
			}
			start += int64(n)
		}
		if rerr != nil {
			break
		}
	}
	rc.Close()
	d, err := l.Digest()
	if err != nil {
		return v1.Hash{}, 0, err
	}
	resp, err := p.do(ctx, c, http.MethodPut, withDigest(loc, d), http.NoBody, 0, nil, http.StatusCreated)
	if err != nil {
		return v1.Hash{}, 0, fmt.Errorf("uploading layer %s: %w", d, err)
	}
	resp.Body.Close()
	return d, start, nil
}
