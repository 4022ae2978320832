package commands_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

type planJSON struct {
	Images []struct {
		Source        string `json:"source"`
		Target        string `json:"target"`
		Digest        string `json:"digest"`
		Current       string `json:"current"`
		Blobs         int    `json:"blobs"`
		Bytes         int64  `json:"bytes"`
		Existing      int    `json:"existing_blobs"`
		Mountable     int    `json:"mountable_blobs"`
		Upload        int    `json:"upload_blobs"`
		UploadBytes   int64  `json:"upload_bytes"`
		ExistingBlobs []string
	} `json:"images"`
	UploadBlobs int `json:"upload_blobs"`
}

func readPlan(t *testing.T, out string) planJSON {
	t.Helper()
	var p planJSON
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("--dry-run --json: %v\n%s", err, out)
	}
	return p
}

// TestPushDryRun: push --dry-run says what would be uploaded and what is
// there already, and writes nothing.
func TestPushDryRun(t *testing.T) {
	c := newCLI(t)
	ref := testPrefix(t) + "/tool:v1"
	img := caseImage(t)
	c.storeImage(t, ref, img)
	d, _ := img.Digest()

	out, _ := c.mustRun(t, "push", "--dry-run", "--json", ref)
	p := readPlan(t, out)
	if len(p.Images) != 1 || p.Images[0].Digest != d.String() || p.Images[0].Blobs != 2 || p.Images[0].Upload != 2 || p.Images[0].Current != "" {
		t.Errorf("dry run before the push = %+v; want 2 blobs to upload, digest %s, no current tag", p.Images, d)
	}
	if got := digestAt(t, ref); got != "" {
		t.Fatalf("push --dry-run wrote %s to the registry", got)
	}
	text, _ := c.mustRun(t, "push", "--dry-run", ref)
	if !strings.Contains(text, "nothing was written") || !strings.Contains(text, "new") {
		t.Errorf("push --dry-run printed:\n%s", text)
	}

	c.mustRun(t, "push", ref)
	out, _ = c.mustRun(t, "push", "--dry-run", "--json", ref)
	p = readPlan(t, out)
	if p.Images[0].Existing != 2 || p.Images[0].Upload != 0 || p.Images[0].Current != d.String() || p.UploadBlobs != 0 {
		t.Errorf("dry run after the push = %+v; want every blob existing and the tag unchanged", p.Images)
	}
}

// TestMirrorAllAndDryRun: mirror --all copies every tag of every
// repository under the prefix (and nothing beside it); --dry-run before it
// lists the same images and writes nothing.
func TestMirrorAllAndDryRun(t *testing.T) {
	c := newCLI(t)
	p := testPrefix(t)
	a := pushImage(t, p+"/src/a:v1")
	b1 := pushImage(t, p+"/src/a/b:v1")
	b2 := pushIndex(t, p+"/src/a/b:v2")
	pushImage(t, p+"/srcx/c:v1") // beside the prefix, not under it
	want := map[string]string{}
	da, _ := a.Digest()
	db1, _ := b1.Digest()
	db2, _ := b2.Digest()
	want[p+"/dst/a:v1"] = da.String()
	want[p+"/dst/a/b:v1"] = db1.String()
	want[p+"/dst/a/b:v2"] = db2.String()

	out, _ := c.mustRun(t, "mirror", "--all", p+"/src", "--to", p+"/dst", "--dry-run", "--json")
	plan := readPlan(t, out)
	if len(plan.Images) != len(want) {
		t.Fatalf("dry run plans %d images, want %d: %+v", len(plan.Images), len(want), plan.Images)
	}
	for _, im := range plan.Images {
		if want[im.Target] != im.Digest || im.Upload != 0 || im.Mountable != im.Blobs {
			t.Errorf("planned %s@%s (mount %d of %d, upload %d); want digest %s, every blob mounted", im.Target, im.Digest, im.Mountable, im.Blobs, im.Upload, want[im.Target])
		}
		if digestAt(t, im.Target) != "" {
			t.Errorf("mirror --dry-run wrote %s", im.Target)
		}
	}

	// --all needs no SSEBench home: run it outside one.
	if _, stderr, err := runRoot(t, "mirror", "--all", p+"/src", "--to", p+"/dst"); err != nil {
		t.Fatalf("mirror --all outside a home: %v\n%s", err, stderr)
	}
	for ref, d := range want {
		if got := digestAt(t, ref); got != d {
			t.Errorf("after mirror --all, %s names %q, want %s", ref, got, d)
		}
	}
	if digestAt(t, p+"/dstx/c:v1") != "" || digestAt(t, p+"/dst/c:v1") != "" {
		t.Error("mirror --all copied a repository beside the prefix")
	}

	for _, args := range [][]string{
		{"mirror", "--all", p + "/src", "--to", p + "/dst", "--tasks", "x"},
		{"mirror", "--all", p + "/src", "--to", p + "/src/copy"},
		{"mirror", "--all", p + "/src", "--to", p + "/-dst"},
		{"mirror", "--all", p + "/../src", "--to", p + "/dst"},
	} {
		_, _, err := c.run(t, args...)
		oneLine(t, err)
	}
	if digestAt(t, p+"/src/copy/a:v1") != "" {
		t.Error("mirror --all copied into its own prefix")
	}
}

// TestMirrorDatasetName: --dataset examples is the home's dataset of that
// name even where the working directory has an examples/ folder (the
// checkout's Go examples); ./examples is that folder.
func TestMirrorDatasetName(t *testing.T) {
	c := newCLI(t)
	p := testPrefix(t)
	exampleDataset(t, c)
	writeFiles(t, c.wd, map[string]string{"examples/doc.go": "package examples\n"})
	out, stderr, err := c.run(t, "--registry", p, "mirror", "--dataset", "examples", "--tasks", kvconf, "--to", p+"-dst", "--dry-run")
	if want := p + "/case/examples/" + kvconf + ":examples-v1"; !strings.Contains(out+stderr+fmt.Sprint(err), want) {
		t.Errorf("mirror --dataset examples = %v\n%s%s\nwant the home's dataset: %s named", err, out, stderr, want)
	}
	_, _, err = c.run(t, "--registry", p, "mirror", "--dataset", "./examples", "--to", p+"-dst", "--dry-run")
	if err == nil || !strings.Contains(err.Error(), "reading dataset ./examples") {
		t.Errorf("mirror --dataset ./examples = %v, want the working directory's folder read (it is no dataset)", err)
	}
}
