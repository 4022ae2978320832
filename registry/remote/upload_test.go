package remote

import "testing"

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   int64
		wantOK bool
	}{
		{in: "0-0", want: 0, wantOK: true},
		{in: "0-1023", want: 1024, wantOK: true},
		{in: "bytes=0-99", want: 100, wantOK: true},
		{in: "", wantOK: false},
		{in: "5-10", wantOK: false},
	} {
		got, ok := parseRange(tc.in)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("parseRange(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}
