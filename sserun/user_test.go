package sserun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLookupUser(t *testing.T) {
	passwd := filepath.Join(t.TempDir(), "passwd")
	data := "root:x:0:0:root:/root:/bin/bash\n# comment\n\nmodel:x:1000:1000::/home/model:/bin/bash\n" +
		"sse-runner:x:999:996::/nonexistent:/usr/sbin/nologin\nbroken:x:a:b::/:/bin/sh\n"
	if err := os.WriteFile(passwd, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LookupUser(passwd, "sse-runner")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(User{Name: "sse-runner", UID: 999, GID: 996, Home: "/nonexistent"}, got); diff != "" {
		t.Errorf("LookupUser(sse-runner) (-want +got):\n%s", diff)
	}
	for name, want := range map[string]string{"nobody": "no such user", "broken": "malformed entry"} {
		if _, err := LookupUser(passwd, name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LookupUser(%s) = %v, want an error containing %q", name, err, want)
		}
	}
}

func TestCheckRunner(t *testing.T) {
	if err := CheckRunner(User{Name: "sse-runner", UID: 999, GID: 999}); err != nil {
		t.Errorf("CheckRunner(sse-runner) = %v", err)
	}
	for _, u := range []User{
		{Name: "root", UID: 0, GID: 0},
		{Name: "model", UID: Model.UID, GID: Model.GID},
		{Name: "sse-runner", UID: 999, GID: 0},
		{Name: "sse-runner", UID: 999, GID: Model.GID},
	} {
		if err := CheckRunner(u); err == nil || !strings.Contains(err.Error(), u.Name) {
			t.Errorf("CheckRunner(%+v) = %v, want a refusal naming the account", u, err)
		}
	}
}
