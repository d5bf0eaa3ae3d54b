package reader_test

import (
	"errors"
	"strings"
)

func errorsAs(err error, target any) bool { return errors.As(err, target) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
