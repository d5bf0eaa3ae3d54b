package config

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a configuration.
type Problem struct {
	// Path is the JSON path of the value ("gates[0].relay.pin"), or "" for
	// the document as a whole.
	Path string
	// Env names the SVC_* variable the value came from, if it did.
	Env string
	// Msg says what is wrong.
	Msg string
}

func (p Problem) String() string {
	s := p.Msg
	if p.Path != "" {
		s = p.Path + ": " + s
	}
	if p.Env != "" {
		s += " (from " + p.Env + ")"
	}
	return s
}

// Error is returned by Load and Parse when the file cannot be used. It
// lists every problem found, in document order, so that one run shows
// everything an installer has to fix.
type Error struct {
	// File is the path Load read, or "" for Parse.
	File     string
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config")
	if e.File != "" {
		b.WriteString(" " + e.File)
	}
	if len(e.Problems) == 1 {
		b.WriteString(": " + e.Problems[0].String())
		return b.String()
	}
	fmt.Fprintf(&b, ": %d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}
