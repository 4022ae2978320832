package entrypoint

import (
	"strings"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// OpenCodeEnv is how the run tells the entrypoint whether its agent
// drives the OpenCode server that the tool image carries: "1" starts it,
// "0" leaves it off. A run that does not say (the variable unset: a
// pipeline that predates it) gets the server, as before. Every run,
// the dummy's included, started OpenCode and said so in its notes,
// which cost a second or two and a process an agent that never talks to
// it had no use for.
const OpenCodeEnv = contract.EnvOpenCode

// openCodeWanted says whether environ (the container's KEY=VALUE list)
// asks for the OpenCode server.
func openCodeWanted(environ []string) bool {
	for i := len(environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(environ[i], OpenCodeEnv+"="); ok {
			return strings.TrimSpace(v) != "0"
		}
	}
	return true
}
