// Command ssebench-entrypoint is a tool image's entrypoint,
// /usr/local/bin/entrypoint: package sserun/entrypoint with its built-in
// modes (sandbox, sidecar). An extension that adds a mode builds a program
// like this one that also imports its mode's package, and passes it to
// `ssebench runtime build --entrypoint PKG`.
package main

import "github.com/42-b3yond-6ug/ssebench/sserun/entrypoint"

func main() { entrypoint.Main() }
