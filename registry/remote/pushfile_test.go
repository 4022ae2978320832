package remote

import (
	"context"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/faultproxy"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/imagetest"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// TestIntegrationPushFromStoreStreamsChunks pushes an image of the local
// store in chunks through a registry that fails some PATCHes part-way:
// the chunks go straight from the store's files, a failed one is sent
// again from the file, so the push holds no chunk in memory (it held one
// per job, 8 MiB each), and the registry ends with the image's digest. A
// blob damaged in the store fails the push before its upload is committed.
func TestIntegrationPushFromStoreStreamsChunks(t *testing.T) {
	reg := testenv.StartRegistry(t)
	ctx := context.Background()
	const chunk = 4 << 20
	s := imagetest.Store(t)
	big := imagetest.Layer(t, 2*chunk+12345)
	local, _ := name.ParseReference("example.invalid/local/streamed:1")
	if err := s.Write(ctx, local, imagetest.ImageOf(t, big, imagetest.Layer(t, 2000))); err != nil {
		t.Fatal(err)
	}
	img, err := s.Image(local)
	if err != nil {
		t.Fatal(err)
	}
	want := imagetest.Digest(t, img)

	p := faultproxy.New(reg)
	defer p.Close()
	p.Add(faultproxy.Rule{Method: "PATCH", Path: uploadPath, Every: 2, Times: 2, Fault: unavailable})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = Push(ctx, p.Host+"/streamed/img:1", img, noAuth, fastRetries, withChunkSize(chunk), WithJobs(1))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("push past two failed PATCHes: %v", err)
	}
	if len(p.Log()) == 0 {
		t.Fatal("no fault fired: the case tests nothing")
	}
	if got := imagetest.Pulled(t, reg+"/streamed/img:1"); got != want {
		t.Errorf("the registry holds %s, want %s", got, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc >= chunk {
		t.Errorf("the push allocated %d bytes, a chunk (%d) or more: a chunk was held in memory", alloc, chunk)
	}

	// A layer damaged in the store: its upload is never committed.
	bigDigest := imagetest.Digest(t, big)
	f, err := os.OpenFile(s.BlobPath(bigDigest), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("damage"), 2*chunk+10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Push(ctx, reg+"/streamed/damaged:1", img, noAuth, fastRetries, withChunkSize(chunk), WithJobs(1))
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), bigDigest.Hex[:12]) {
		t.Fatalf("push of a damaged blob = %v, want one line naming it", err)
	}
	if tagged(t, reg+"/streamed/damaged:1") {
		t.Fatal("the push of a damaged blob left a tag")
	}
	resp, err := http.Head("http://" + reg + "/v2/streamed/damaged/blobs/" + bigDigest.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("HEAD of the damaged blob in the registry: %s, want 404: its upload was committed", resp.Status)
	}
}
