//go:build tools

// Package tools pins the BuildKit daemon and client that scripts/setup.sh
// builds for local development and CI. `go install pkg@version` refuses
// github.com/moby/buildkit because its go.mod carries replace directives, so
// the binaries are built from this small module instead, which keeps the
// exact version and every dependency checksum in go.mod and go.sum.
package tools

import (
	_ "github.com/moby/buildkit/cmd/buildctl"
	_ "github.com/moby/buildkit/cmd/buildkitd"
)
