// Package options binds the CLI's flags into plain structs and turns them
// into the library packages' settings.
package options
