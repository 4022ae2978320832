// Command ssebench-entrypoint-example is the entrypoint with the example
// mode of package sserun/entrypoint/examplemode: what an extension's own
// entrypoint program looks like.
package main

import (
	"github.com/42-b3yond-6ug/ssebench/sserun/entrypoint"
	_ "github.com/42-b3yond-6ug/ssebench/sserun/entrypoint/examplemode"
)

func main() { entrypoint.Main() }
