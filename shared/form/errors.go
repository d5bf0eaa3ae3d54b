package form

import (
	"errors"
	"fmt"
)

// ErrInvalidSchema is returned (wrapped in *SchemaError) when a form schema
// is not JSON, or uses something outside the subset this package supports.
var ErrInvalidSchema = errors.New("invalid form schema")

// SchemaError names the first problem found in a form schema.
type SchemaError struct {
	// Pointer is the RFC 6901 JSON pointer of the problem ("" for the
	// whole document; for a missing keyword, where it should be).
	Pointer string
	// Message says what is wrong, for the admin editing the form.
	Message string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("form schema at %q: %s", e.Pointer, e.Message)
}

// Unwrap makes errors.Is(err, ErrInvalidSchema) hold.
func (e *SchemaError) Unwrap() error { return ErrInvalidSchema }

func schemaErr(pointer, format string, args ...any) error {
	return &SchemaError{Pointer: pointer, Message: fmt.Sprintf(format, args...)}
}

// FieldError names one problem with one answer. Field is the question key;
// the transport adds where the answers came from (body.custom_fields.).
type FieldError struct {
	Field   string
	Message string
}
