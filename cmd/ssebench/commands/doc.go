// Package commands provides the cobra commands of the ssebench CLI: flag
// parsing and wiring only; the work happens in the library packages.
package commands
