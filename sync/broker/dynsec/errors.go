package dynsec

import (
	"errors"
	"fmt"
)

var (
	// ErrUnavailable is returned (wrapped, with the cause) when the broker
	// could not be reached, refused the admin's connection, or did not
	// answer a request in time: the request may succeed later.
	ErrUnavailable = errors.New("dynsec: the broker's dynamic security plugin is unavailable")

	// ErrNotFound is returned (wrapped) when the plugin has no client of
	// the username asked about.
	ErrNotFound = errors.New("dynsec: no such client")

	// ErrConfig is returned by New when the configuration is unusable;
	// the error names the field.
	ErrConfig = errors.New("dynsec: invalid configuration")
)

// CommandError is returned when the plugin refused a command: Command is
// the command's name and Message the plugin's reason ("Role not found").
type CommandError struct {
	Command string
	Message string
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("dynsec: %s refused: %s", e.Command, e.Message)
}

// The plugin's reasons this package acts on (Mosquitto 2.0's
// dynamic_security plugin).
const (
	msgClientExists   = "Client already exists"
	msgClientNotFound = "Client not found"
	msgRoleExists     = "Role already exists"
	msgRoleNotFound   = "Role not found"
)
