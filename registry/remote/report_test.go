package remote

import "testing"

func TestPushReportString(t *testing.T) {
	r := &PushReport{Uploaded: 12_900_000, UploadedBlobs: 2, Mounted: 1024, MountedBlobs: 1}
	want := "uploaded 12.3 MiB (2 blobs), mounted 1.0 KiB (1 blob), skipped 0 B already there (0 blobs)"
	if got := r.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
