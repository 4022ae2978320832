// Package ssebench holds what the whole project shares at its root: the
// version, embedded from the VERSION file so the binary knows it anywhere.
package ssebench

import (
	_ "embed"
	"strings"
)

//go:embed VERSION
var version string

// Version returns the SemVer string of the VERSION file, trimmed.
func Version() string { return strings.TrimSpace(version) }
