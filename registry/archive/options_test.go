package archive

import (
	"bytes"
	"context"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestOptionsRejectBadInput(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opt  Option
	}{
		{name: "platform without architecture", opt: WithPlatform(&v1.Platform{OS: "linux"})},
		{name: "empty earlier archive", opt: WithSince("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if _, err := Save(ctx, &buf, nil, tc.opt); err == nil {
				t.Error("Save accepted the option")
			}
			if buf.Len() != 0 {
				t.Errorf("Save wrote %d bytes before refusing the option", buf.Len())
			}
			if _, err := Load(ctx, &buf, tc.opt); err == nil {
				t.Error("Load accepted the option")
			}
			if _, err := PushLoaded(ctx, &Report{}, "localhost:5000/x", tc.opt); err == nil {
				t.Error("PushLoaded accepted the option")
			}
		})
	}
}
