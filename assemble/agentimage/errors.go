package agentimage

import (
	"errors"
	"fmt"
)

// ErrNeedsBuildKit marks a Dockerfile (or one of its instructions, once its
// variables are known) that the native assembler cannot build but BuildKit
// can: build it with BuildKit instead. Match it with errors.Is.
var ErrNeedsBuildKit = errors.New("needs BuildKit")

// Error is a problem with an agent's Dockerfile: its message is one line
// that names the file and the line, "agents/x/Dockerfile:3: ...".
type Error struct {
	// Dockerfile is the path of the Dockerfile, as given to the planner.
	Dockerfile string
	// Line is the 1-based line of the instruction, or 0 when the problem
	// is the whole file.
	Line int
	// Err says what is wrong.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	name := e.Dockerfile
	if name == "" {
		name = "Dockerfile"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", name, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", name, e.Err)
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// lineError returns an *Error for line of the plan's Dockerfile; an error
// that already is one is given the path when it lacks it.
func (p *Plan) lineError(line int, err error) error {
	var e *Error
	if errors.As(err, &e) {
		if e.Dockerfile == "" {
			e.Dockerfile = p.Dockerfile
		}
		if e.Line == 0 {
			e.Line = line
		}
		return err
	}
	return &Error{Dockerfile: p.Dockerfile, Line: line, Err: err}
}

// needsBuildKit says why BuildKit must build an instruction.
func needsBuildKit(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrNeedsBuildKit)
}
