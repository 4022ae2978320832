// Command hostile-summary prints the table of the hostile-input suite from
// the directory SSEBENCH_HOSTILE_SUMMARY named during `go test` (see
// package hostile), then the red team's table of attacks. scripts/test.sh
// runs it last; it fails when an attack's test failed.
package main

import (
	"fmt"
	"os"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: hostile-summary DIR")
		os.Exit(2)
	}
	rows, err := hostile.Summarize(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile-summary:", err)
		os.Exit(1)
	}
	fmt.Println("Hostile-input suite (TestHostile*):")
	hostile.Print(os.Stdout, rows)
	attacks, err := hostile.Attacks(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile-summary:", err)
		os.Exit(1)
	}
	if len(attacks) > 0 {
		fmt.Println()
		fmt.Println("Red team (agents written to cheat; each must end stopped, never PASSED):")
		hostile.PrintAttacks(os.Stdout, attacks)
	}
	for _, a := range attacks {
		if a.Result == "fail" {
			os.Exit(1)
		}
	}
}
