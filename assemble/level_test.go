package assemble

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/klauspost/compress/gzip"
)

// The layers an assembly writes are gzipped at the fastest level
// (toolGzipLevel): each is the level-1 gzip of its own tar stream.
func TestToolLayersFastestGzip(t *testing.T) {
	ti := assembleTool(t, caseImage(t), runtimeImage(t))
	m, err := ti.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range strings.Split(m.Annotations[AnnotationToolLayers], ",") {
		d, err := v1.NewHash(s)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ti.LayerByDigest(d)
		if err != nil {
			t.Fatal(err)
		}
		got := readAllOf(t, l.Compressed)
		tarBytes := readAllOf(t, l.Uncompressed)
		var want bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&want, 1)
		zw.Header = gzip.Header{ModTime: time.Unix(0, 0), OS: 255}
		zw.Write(tarBytes)
		zw.Close()
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("layer %s (%d bytes) is not the level-1 gzip of its tar stream (%d bytes)", d, len(got), want.Len())
		}
	}
}

func readAllOf(t *testing.T, open func() (io.ReadCloser, error)) []byte {
	t.Helper()
	rc, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
