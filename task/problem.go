package task

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a task or dataset, printed on one line as
// "file:line: message" (or "file: message" when the line is unknown).
type Problem struct {
	// File is the path of the file at fault, joined to the folder the
	// caller named, such as "datasets/pilot/x/sse/config.yaml". It is empty
	// when the problem is not about one file.
	File string
	// Line is the 1-based line in File, or 0 when unknown.
	Line int
	// Msg says what is wrong, lower case, without a trailing period.
	Msg string
}

// String formats the problem as one line.
func (p Problem) String() string {
	msg := oneLine(p.Msg)
	switch {
	case p.File != "" && p.Line > 0:
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, msg)
	case p.File != "":
		return p.File + ": " + msg
	case p.Line > 0:
		return fmt.Sprintf("line %d: %s", p.Line, msg)
	default:
		return msg
	}
}

// Error implements error, so that a single Problem can be returned as one.
func (p Problem) Error() string { return p.String() }

// Problems is a list of problems that is also an error: its message has one
// problem per line. Callers that want the list use errors.As.
type Problems []Problem

// Error implements error.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Err returns ps as an error, or nil when there are no problems. (A nil
// Problems stored in an error interface would not compare equal to nil.)
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// oneLine keeps a message on one line: library errors (yaml, BuildKit)
// sometimes span several.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	return strings.Join(fields, "; ")
}
