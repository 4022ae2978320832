package gateway

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestUsageStripper: the usage chunk the gateway asked for leaves the
// stream, and usage on a chunk with choices leaves that chunk, however
// the bytes are cut; everything else passes as it came.
func TestUsageStripper(t *testing.T) {
	in := "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n" +
		": a comment\r\n" +
		"data: {\"choices\":[{\"delta\":{}}],\"usage\":{\"prompt_tokens\":1}}\r\n\r\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n" +
		"data: {\"choices\":[],\"usage\":null}\n\n" +
		"data: [DONE]\n\n"
	want := "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{}}]}\n\n" +
		"data: {\"choices\":[],\"usage\":null}\n\n" +
		"data: [DONE]\n\n"
	for name, r := range map[string]func() io.Reader{
		"whole":       func() io.Reader { return strings.NewReader(in) },
		"byte a time": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
	} {
		got, err := io.ReadAll(newUsageStripper(io.NopCloser(r())))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s: got\n%q\nwant\n%q", name, got, want)
		}
	}
	// An event too long to hold passes whole, as it came.
	long := "data: {\"x\":\"" + strings.Repeat("a", maxLine+10) + "\",\"usage\":{}}\n\ndata: [DONE]\n\n"
	got, _ := io.ReadAll(newUsageStripper(io.NopCloser(strings.NewReader(long))))
	if string(got) != long {
		t.Errorf("a long event changed: %d bytes, want %d", len(got), len(long))
	}
}
