package buildkit

import (
	"bytes"
	"testing"
	"time"
)

func TestResolveAddress(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		opts []Option
		want string
	}{
		{name: "default", want: DefaultAddress},
		{name: "environment", env: "tcp://127.0.0.1:1234", want: "tcp://127.0.0.1:1234"},
		{name: "option wins over environment", env: "tcp://127.0.0.1:1234", opts: []Option{WithAddress("unix:///tmp/bk.sock")}, want: "unix:///tmp/bk.sock"},
		{name: "option without environment", opts: []Option{WithAddress("unix:///tmp/bk.sock")}, want: "unix:///tmp/bk.sock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == EnvHost {
					return tc.env
				}
				return ""
			}
			o, err := makeOptions(append([]Option{withGetenv(getenv)}, tc.opts...)...)
			if err != nil {
				t.Fatalf("makeOptions() = %v", err)
			}
			if o.address != tc.want {
				t.Errorf("address = %q, want %q", o.address, tc.want)
			}
		})
	}
}

func TestOptionDefaults(t *testing.T) {
	o, err := makeOptions()
	if err != nil {
		t.Fatalf("makeOptions() = %v", err)
	}
	if o.progressMode != ProgressAuto {
		t.Errorf("progress mode = %q, want %q", o.progressMode, ProgressAuto)
	}
	if o.connectTimeout != defaultConnectTimeout {
		t.Errorf("connect timeout = %s, want %s", o.connectTimeout, defaultConnectTimeout)
	}
	if o.progress == nil {
		t.Error("progress writer is nil, want stderr")
	}
}

func TestOptionsRejectBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Option
	}{
		{"empty address", WithAddress("")},
		{"nil progress writer", WithProgress(nil)},
		{"unknown progress mode", WithProgressMode("fancy")},
		{"zero connect timeout", WithConnectTimeout(0)},
		{"negative connect timeout", WithConnectTimeout(-time.Second)},
		{"empty temp dir", WithTempDir("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := makeOptions(tc.opt); err == nil {
				t.Errorf("makeOptions(%s) = nil error, want one", tc.name)
			}
		})
	}
}

func TestOptionsAcceptGoodValues(t *testing.T) {
	var buf bytes.Buffer
	dir := t.TempDir()
	o, err := makeOptions(WithProgress(&buf), WithProgressMode(ProgressPlain), WithConnectTimeout(time.Second), WithTempDir(dir))
	if err != nil {
		t.Fatalf("makeOptions() = %v", err)
	}
	if o.progress != &buf || o.progressMode != ProgressPlain || o.connectTimeout != time.Second || o.tempDir != dir {
		t.Errorf("options = %+v, want the values given", o)
	}
}
