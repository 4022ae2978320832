// Command ssebench-entrypoint-example is the entrypoint with the example
// mode of package examples/entrypointmode: what an extension's own
// entrypoint program looks like.
package main

import (
	_ "github.com/42-b3yond-6ug/ssebench/examples/entrypointmode"
	"github.com/42-b3yond-6ug/ssebench/sserun/entrypoint"
)

func main() { entrypoint.Main() }
